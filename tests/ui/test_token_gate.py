"""The token gate (issue 29): allowed hosts against DNS rebinding, TLS, the token typed once, slow guessing, the
client's address in the log, short tokens refused. Script tests with a fake clock; real dashboards for the rest."""
from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.access.gate import Request
from app.access.guess_limit import TokenExchange
from app.paths import ROOT
from app.server.ports import free_port
from tests.helpers import Clock, require_tool
from tests.ui.apptest import open_page, wait_until
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, app_environ

TOKEN = "gate-test-token-0123456789"  # 26 characters
BEYOND = Request("192.0.2.7", "192.0.2.7:8501", client="192.0.2.9")  # a browser on another machine
NAME = "lab.test"  # mapped to 127.0.0.1 in the test browser, like a reverse proxy's name
REBIND = "rebind.attacker.example"
FIELD = 'input[aria-label="Operator token"]'


# --- the page's own rules, in a script test (no browser) ------------------------------------------------------

@pytest.fixture
def gate(ui_env, monkeypatch):
    """A fresh token exchange on a fake clock, a browser beyond loopback, and the operator token set."""
    import app.ui.access as access  # noqa: PLC0415

    clock = Clock()
    monkeypatch.setattr(access, "EXCHANGE", TokenExchange(clock))
    monkeypatch.setattr(access, "request", lambda: BEYOND)
    monkeypatch.setattr(access, "_said", set())
    monkeypatch.setenv("TBL_OPERATOR_TOKEN", TOKEN)
    return clock


def token_field(at):
    found = [t for t in at.sidebar.text_input if t.label == "Operator token"]
    return found[0] if found else None


def buttons(at) -> list[str]:
    return [b.label for b in at.button]


def test_ten_wrong_tokens_lock_the_gate_even_for_the_right_one(gate, caplog):
    at = open_page("lab_pages/dynamic_batching.py")
    for n in range(10):
        token_field(at).set_value(f"wrong-guess-{n}").run()
        assert token_field(at).value == "", "the field keeps what was typed"
        gate.now += 61  # past every wait: each of the ten is compared
    errors = [e.value for e in at.sidebar.error]
    assert any("locked: 10 wrong tokens within 10 min" in e for e in errors), errors
    token_field(at).set_value(TOKEN).run()
    errors = [e.value for e in at.sidebar.error]
    assert "Apply" not in buttons(at) and any("not checked: locked" in e for e in errors), errors
    assert sum("refused operator token from 192.0.2.9" in r.getMessage() for r in caplog.records) == 11
    gate.now += 600
    token_field(at).set_value(TOKEN).run()
    assert "Apply" in buttons(at) and "Start traffic" in buttons(at)


def test_a_token_the_browser_sends_again_is_not_a_new_try(gate, caplog):
    # A browser that has not drawn the emptied field yet sends the typed text again with its next rerun (a live
    # fragment's). Seen beside a busy host: one wrong token was exchanged three times, and the page then said "not
    # checked: 1 wrong token lately" instead of "wrong operator token"; past the wait each resend would count.
    at = open_page("lab_pages/dynamic_batching.py")
    for _ in range(3):
        token_field(at).set_value("wrong-guess").run()
        gate.now += 61  # past every wait: a resend would be compared again
    errors = [e.value for e in at.sidebar.error]
    assert errors == ["Refused: wrong operator token; 1 wrong token lately: wait 1 s before the next try."], errors
    assert sum("refused operator token" in r.getMessage() for r in caplog.records) == 1
    token_field(at).set_value("another-wrong-guess").run()  # a new text is a new try: the second wrong token
    errors = [e.value for e in at.sidebar.error]
    assert errors == ["Refused: wrong operator token; 2 wrong tokens lately: wait 2 s before the next try."], errors
    assert "another-wrong-guess" not in repr(dict(at.session_state)) and "wrong-guess" not in repr(
        dict(at.session_state))  # the page keeps a keyed digest of the text compared, not the text


def test_a_token_held_back_by_the_wait_is_compared_when_sent_after_it(gate):
    at = open_page("lab_pages/dynamic_batching.py")
    token_field(at).set_value("wrong-guess").run()
    token_field(at).set_value(TOKEN).run()  # within the 1 s wait: not compared, so not remembered as compared
    assert "Apply" not in buttons(at)
    gate.now += 2
    token_field(at).set_value(TOKEN).run()
    assert "Apply" in buttons(at)


def test_a_fast_second_try_is_not_even_compared(gate):
    at = open_page("lab_pages/dynamic_batching.py")
    token_field(at).set_value("wrong-guess").run()
    gate.now += 0.5  # the wait after one wrong token is 1 s
    token_field(at).set_value(TOKEN).run()
    errors = [e.value for e in at.sidebar.error]
    assert "Apply" not in buttons(at) and any("wait 1 s before the next try" in e for e in errors), errors


def test_a_foreign_host_gets_the_read_only_view(gate, monkeypatch):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setattr(access, "request", lambda: Request("127.0.0.1", f"{REBIND}:8501"))
    at = open_page("lab_pages/dynamic_batching.py")
    assert "Apply" not in buttons(at) and token_field(at) is None
    infos = [i.value for i in at.info]
    assert any(f"opened as `{REBIND}:8501`, which is not an allowed host" in i for i in infos), infos


def test_a_short_token_leaves_the_dashboard_read_only_for_everyone(gate, monkeypatch, caplog):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setenv("TBL_OPERATOR_TOKEN", "s3cret")
    monkeypatch.setattr(access, "request", lambda: Request("127.0.0.1", "127.0.0.1:8501"))  # even on loopback
    at = open_page("lab_pages/dynamic_batching.py")
    infos = [i.value for i in at.info]
    assert "Apply" not in buttons(at) and token_field(at) is None
    assert any("TBL_OPERATOR_TOKEN has 6 characters" in i and "secrets.token_urlsafe" in i for i in infos), infos
    assert any("at least 16" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("tls", [False, True])
def test_plain_http_beyond_loopback_is_warned_about(gate, monkeypatch, tls):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setattr(access, "request", lambda: Request(BEYOND.bind, BEYOND.host, BEYOND.client, tls=tls))
    at = open_page("lab_pages/dynamic_batching.py")
    warned = any("Plain HTTP beyond loopback" in w.value for w in at.sidebar.warning)
    assert warned is not tls, [w.value for w in at.sidebar.warning]


# --- real dashboards: Streamlit's Host check, TLS, the field in a real browser, the client's address ---------------

def upgrade_status(url: str, host: str) -> int:
    """Open Streamlit's WebSocket with this Host header (and a same-origin Origin); return the HTTP status."""
    port = int(url.rsplit(":", 1)[1])
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}:{port}\r\nOrigin: http://{host}:{port}\r\n"
                 f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(handshake.encode())
        status = sock.recv(4096).split(b"\r\n", 1)[0].decode()
    return int(status.split()[1])


def test_a_foreign_host_is_refused_before_any_page_runs(dashboard):
    statuses = {host: upgrade_status(dashboard, host) for host in (REBIND, "127.0.0.1", "localhost", "lab.test")}
    print("WebSocket status by Host:", statuses)
    assert statuses == {REBIND: 403, "127.0.0.1": 101, "localhost": 101, "lab.test": 403}, statuses


@pytest.fixture(scope="module")
def name_browser(playwright_module):
    """A Chromium that resolves lab.test and rebind.attacker.example to 127.0.0.1 (a rebinding page's view)."""
    require_tool(str(CHROMIUM), "chromium")
    rules = f"--host-resolver-rules=MAP {NAME} 127.0.0.1, MAP {REBIND} 127.0.0.1"
    chromium = playwright_module.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                  args=[*CHROMIUM_ARGS, rules])
    yield chromium
    chromium.close()


@pytest.mark.browser
def test_a_rebinding_page_gets_no_controls(plain_dashboard, name_browser):
    port, log = plain_dashboard
    page = name_browser.new_page()
    try:
        page.goto(f"http://{REBIND}:{port}/dynamic_batching")
        refused = f"disallowed Origin or Host header: origin=http://{REBIND}:{port}, host={REBIND}:{port}"
        wait_until(lambda: log.read_text().count(refused) >= 2, 60, "two refused WebSockets (a try and a retry)")
        assert page.locator('[data-testid="stAppSkeleton"]').count() == 1  # no page ever ran for this origin
        assert page.get_by_role("button", name="Apply").count() == 0
        assert page.get_by_role("heading", name="Dynamic batching").count() == 0
        page.goto(f"http://127.0.0.1:{port}/dynamic_batching")  # the same browser by a loopback name: operator
        page.get_by_role("button", name="Apply").wait_for(timeout=60_000)
    finally:
        page.close()


def _serve(env: dict, base: Path, args: list[str], scheme: str = "http"):
    """Run the dashboard with extra streamlit arguments; yield its port; end its process group afterwards."""
    port = free_port()
    log_path = base / "streamlit.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.fileWatcherType", "none", *args],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def healthy() -> bool:
            assert proc.poll() is None, f"streamlit exited:\n{log_path.read_text()[-3000:]}"
            try:
                return httpx.get(f"{scheme}://127.0.0.1:{port}/_stcore/health", verify=False, timeout=2).text == "ok"
            except httpx.HTTPError:
                return False
        wait_until(healthy, 60, f"streamlit to answer on {scheme}://127.0.0.1:{port}")
        yield port, log_path
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


def _env(triton, base: Path) -> dict:
    env = {**os.environ, **app_environ(triton, base / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
           "TBL_OPERATOR_TOKEN": TOKEN}
    env.pop("TBL_VIEWER", None)
    return env


HOSTS = ["--server.address", "127.0.0.1", "--server.allowedHosts", "127.0.0.1", "--server.allowedHosts", NAME]


@pytest.fixture(scope="module")
def plain_dashboard(triton, tmp_path_factory):
    """A dashboard on 127.0.0.1 that also answers to lab.test, as behind a plain-HTTP reverse proxy."""
    base = tmp_path_factory.mktemp("plain-dashboard")
    yield from _serve(_env(triton, base), base, HOSTS)


@pytest.fixture(scope="module")
def tls_dashboard(triton, tmp_path_factory):
    """The same with TLS: a self-signed certificate for lab.test made by Debian's openssl."""
    require_tool("/usr/bin/openssl", "openssl")
    base = tmp_path_factory.mktemp("tls-dashboard")
    cert, key = base / "cert.pem", base / "key.pem"
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    yield from _serve(_env(triton, base), base,
                      [*HOSTS, "--server.sslCertFile", str(cert), "--server.sslKeyFile", str(key)], scheme="https")


@pytest.fixture(scope="module")
def any_host_dashboard(triton, tmp_path_factory):
    """A dashboard told to accept every Host (`--server.allowedHosts *`): only the page's own check is left."""
    base = tmp_path_factory.mktemp("any-host-dashboard")
    yield from _serve(_env(triton, base), base, ["--server.address", "127.0.0.1", "--server.allowedHosts", "*"])


@pytest.mark.browser
def test_when_streamlit_accepts_any_host_the_page_still_refuses_a_foreign_one(any_host_dashboard, name_browser):
    port, _ = any_host_dashboard
    page = name_browser.new_page()
    try:
        page.goto(f"http://{REBIND}:{port}/dynamic_batching")
        page.get_by_role("heading", name="Dynamic batching", level=1).wait_for(timeout=60_000)
        wait_until(lambda: page.locator('[data-test-script-state="notRunning"]').count(), 60, "the page's run to end")
        refused = page.get_by_text(f"opened as {REBIND}:{port}, which is not an allowed host name")
        assert refused.count() >= 1, page.inner_text("body")[:2000]
        assert page.get_by_role("button", name="Apply").count() == 0
        assert page.get_by_role("button", name="Start traffic").count() == 0 and page.locator(FIELD).count() == 0
    finally:
        page.close()


def open_gate(browser, url: str, **context):
    """Open Dynamic batching at url in a new context; return (context, page) once the token field is drawn."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, **context)
    page = ctx.new_page()
    page.goto(url)
    page.get_by_role("heading", name="Dynamic batching", level=1).wait_for(timeout=60_000)
    page.locator(FIELD).wait_for(timeout=60_000)
    wait_until(lambda: page.locator('[data-test-script-state="notRunning"]').count(), 60, "the page's run to end")
    return ctx, page


def type_token(page, text: str) -> None:
    field = page.locator(FIELD)
    field.fill(text)
    field.press("Enter")


def wait_for_answer(page, log: Path, locator) -> None:
    """Wait for the page's answer to a typed token; if it does not come, say what the page and the dashboard had
    (the field's value, the run state, the sidebar's text, the dashboard log's last lines) before failing."""
    try:
        locator.wait_for(timeout=60_000)
    except Exception:
        field = page.locator(FIELD)
        print("token field:", repr(field.input_value()) if field.count() else "gone")
        print("script state:", page.locator("[data-test-script-state]").evaluate_all(
            "els => els.map(e => e.dataset.testScriptState)"))
        sidebar = page.locator('[data-testid="stSidebar"]')
        print("sidebar:", sidebar.inner_text()[:1500] if sidebar.count() else "none")
        print("dashboard log:", *log.read_text().splitlines()[-15:], sep="\n  ")
        raise


@pytest.mark.browser
def test_over_plain_http_beyond_loopback_the_page_warns_and_logs_the_clients_address(plain_dashboard, name_browser):
    port, log = plain_dashboard
    # a reverse proxy on this machine says who the client is; Streamlit (uvicorn) trusts that from 127.0.0.1 only
    ctx, page = open_gate(name_browser, f"http://{NAME}:{port}/dynamic_batching",
                          extra_http_headers={"X-Forwarded-For": "198.51.100.4"})
    try:
        assert page.get_by_text("Plain HTTP beyond loopback").count() == 1
        assert page.get_by_role("button", name="Apply").count() == 0
        type_token(page, "a-wrong-guess-typed-here")
        # a rerun's draw: 60 s, as every wait of a page here (30 s passed in a first pass under a 1.1-CPU quota)
        wait_for_answer(page, log, page.get_by_text("Refused: wrong operator token"))
        # the refusal and the emptied field come in the same rerun, but the browser may draw them in either order
        wait_until(lambda: page.locator(FIELD).input_value() == "", 60,
                   "the refused token to be cleared from the field")
        wait_until(lambda: "refused operator token" in log.read_text(), 10, "the refusal in the dashboard's log")
        lines = [line for line in log.read_text().splitlines() if "refused operator token" in line]
        print(lines)
        assert "from 198.51.100.4" in lines[0] and "a-wrong-guess" not in log.read_text(), lines
    finally:
        ctx.close()


@pytest.mark.browser
def test_over_tls_the_token_is_typed_once_and_no_warning_is_shown(tls_dashboard, name_browser):
    port, log = tls_dashboard
    reply = httpx.get(f"https://127.0.0.1:{port}/_stcore/health", verify=False, timeout=10)
    assert reply.status_code == 200 and reply.text == "ok", (reply.status_code, reply.text)
    with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port gets no page
        httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=10)
    ctx, page = open_gate(name_browser, f"https://{NAME}:{port}/dynamic_batching", ignore_https_errors=True)
    try:
        assert page.get_by_text("Plain HTTP beyond loopback").count() == 0
        assert page.get_by_role("button", name="Apply").count() == 0
        type_token(page, TOKEN)
        wait_for_answer(page, log, page.get_by_role("button", name="Apply"))
        assert page.locator(FIELD).count() == 0  # exchanged: the field is gone
        page.reload()  # a new browser session: the flag was this session's only
        page.locator(FIELD).wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Apply").count() == 0
        assert TOKEN not in log.read_text()
    finally:
        ctx.close()
