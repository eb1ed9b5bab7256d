"""The gate in front of every page, on a real `streamlit run streamlit_app.py` (no browser, and no page runs: nothing
here starts a Lab): Streamlit refuses a WebSocket whose Host it does not allow before any session exists (a DNS
rebinding page gets no session at all), and the dashboard serves TLS, and only TLS, when given a certificate. What a
page does with an allowed session (the operator token) is tests/unit/ui/test_access.py's."""
from __future__ import annotations

import base64
import os
import signal
import socket
import ssl
import subprocess
import sys

import httpx
import pytest

from app.paths import ROOT
from app.server.free_ports import free_port
from tests.helpers import require_tool, wait_until

NAME, REBIND = "lab.test", "rebind.attacker.example"


@pytest.fixture(scope="module")
def tls_dashboard(tmp_path_factory):
    """A dashboard on 127.0.0.1 with a self-signed certificate for lab.test (Debian's openssl), answering to
    127.0.0.1 and lab.test (as behind a reverse proxy of that name); yield its port."""
    require_tool("/usr/bin/openssl", "openssl")
    base = tmp_path_factory.mktemp("tls-dashboard")
    cert, key = base / "cert.pem", base / "key.pem"
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_") and k != "TBL_VIEWER"}
    env.update({"TBL_STATE_DIR": str(base / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
                "TRITON_URL": f"http://127.0.0.1:{free_port()}"})  # a page would find no server; none runs here
    with (base / "streamlit.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.fileWatcherType", "none", "--server.address", "127.0.0.1",
             "--server.allowedHosts", "127.0.0.1", "--server.allowedHosts", NAME,
             "--server.sslCertFile", str(cert), "--server.sslKeyFile", str(key)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def healthy() -> bool:
            assert proc.poll() is None, f"streamlit exited:\n{(base / 'streamlit.log').read_text()[-3000:]}"
            try:
                return httpx.get(f"https://127.0.0.1:{port}/_stcore/health", verify=False, timeout=2).text == "ok"
            except httpx.HTTPError:
                return False

        wait_until(healthy, 90, f"streamlit to answer on https://127.0.0.1:{port}")
        yield port
    finally:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(wait_s)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


def upgrade_status(port: int, host: str) -> int:
    """Open Streamlit's WebSocket over TLS with this Host header (and a same-origin Origin); return the HTTP status."""
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}:{port}\r\nOrigin: https://{host}:{port}\r\n"
                 f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n")
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed: the test made it
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=NAME) as sock:
        sock.sendall(handshake.encode())
        status = sock.recv(4096).split(b"\r\n", 1)[0].decode()
    return int(status.split()[1])


def test_a_host_streamlit_does_not_allow_gets_no_websocket(tls_dashboard):
    statuses = {host: upgrade_status(tls_dashboard, host) for host in (REBIND, "127.0.0.1", NAME, "localhost")}
    # only the names given: localhost too is refused once server.allowedHosts names others
    assert statuses == {REBIND: 403, "127.0.0.1": 101, NAME: 101, "localhost": 403}, statuses


def test_with_a_certificate_it_serves_tls_and_no_plain_http(tls_dashboard):
    reply = httpx.get(f"https://127.0.0.1:{tls_dashboard}/_stcore/health", verify=False, timeout=10)
    assert (reply.status_code, reply.text) == (200, "ok")
    with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port gets no page
        httpx.get(f"http://127.0.0.1:{tls_dashboard}/_stcore/health", timeout=10)
