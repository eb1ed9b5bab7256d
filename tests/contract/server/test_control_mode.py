"""The control mode of servers started by hand (none, poll, explicit), through a port forward, and of a dead URL."""
from __future__ import annotations

import json
import socket
import threading
import urllib.request
from dataclasses import replace

import pytest

from app.server.control_mode import detect, probe_load_api
from app.server.endpoint import Endpoint
from app.server.free_ports import free_port
from tests.helpers import wait_until


def _index(endpoint: Endpoint) -> list[dict]:
    request = urllib.request.Request(f"{endpoint.http_url}/v2/repository/index", data=b"{}")
    with urllib.request.urlopen(request, timeout=5) as reply:
        return json.loads(reply.read())


def test_default_mode_none_is_found_from_the_process_and_blocks_apply_with_the_fix(none_server):
    mode = detect(none_server.endpoint, environ={})
    assert mode.mode == "none", mode
    assert mode.pid == none_server.pid and f"process {none_server.pid}" in mode.how, mode.how
    assert "polling is enabled" in mode.how and "--model-control-mode=none" in mode.how
    assert not mode.can_apply and "--model-control-mode=explicit" in mode.why_not and "restart" in mode.why_not
    assert mode.repository == none_server.repo and mode.poll_s is None


def test_poll_mode_with_its_interval_and_the_repository_it_serves(poll_server):
    mode = detect(poll_server.endpoint, environ={"TRITON_MODEL_CONTROL_MODE": "none"})  # the process wins
    assert (mode.mode, mode.poll_s, mode.pid) == ("poll", 1.0, poll_server.pid), mode
    assert mode.repository == poll_server.repo and mode.can_apply and mode.applies_by_file, mode
    assert "--repository-poll-secs=1" in mode.how and "TRITON_MODEL_CONTROL_MODE=none ignored" in mode.how
    given = detect(poll_server.endpoint, poll_server.repo, environ={})
    assert given.can_apply and given.repository == poll_server.repo


def test_poll_mode_refuses_a_repository_the_server_does_not_poll(poll_server, tmp_path):
    mode = detect(poll_server.endpoint, tmp_path, environ={})
    assert mode.mode == "poll" and not mode.can_apply, mode
    assert str(tmp_path) in mode.why_not and str(poll_server.repo) in mode.why_not


def test_explicit_mode_by_the_probe_which_changes_nothing(explicit_server):
    before = _index(explicit_server.endpoint)
    mode = detect(explicit_server.endpoint, environ={})
    assert mode.mode == "explicit" and mode.can_apply and mode.why_not is None, mode
    assert mode.repository == explicit_server.repo and mode.pid == explicit_server.pid
    assert _index(explicit_server.endpoint) == before  # the unload probe named a model that cannot exist
    assert probe_load_api(explicit_server.endpoint).answer == "open"


def test_models_that_cannot_load_keep_their_reason(poll_server):
    # A polling server tries a model that failed again at its polls: caught in between, it reads LOADING (CI run 41)
    onnx = wait_until(lambda: [m for m in _index(poll_server.endpoint)
                               if m["name"] == "onnx_plain" and m.get("state") != "LOADING"], 30,
                      "onnx_plain out of LOADING")
    assert onnx[0]["state"] == "UNAVAILABLE" and "onnxruntime" in onnx[0]["reason"], onnx


@pytest.fixture
def forwarded(poll_server):
    """The poll server's HTTP port forwarded from another port by this process (as a proxy or a container would)."""
    target = poll_server.endpoint.http_url.rsplit(":", 1)[1]
    listener = socket.create_server(("127.0.0.1", free_port()))
    stop = threading.Event()

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                sock.close()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection(("127.0.0.1", int(target)))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    yield replace(poll_server.endpoint, http_url=f"http://127.0.0.1:{port}")
    stop.set()
    thread.join(5)
    listener.close()


def test_behind_a_port_forward_the_mode_is_unknown_with_the_fix(forwarded):
    mode = detect(forwarded, environ={})
    assert mode.mode == "unknown" and not mode.can_apply, mode
    assert "not tritonserver" in mode.how, mode.how
    assert "--model-control-mode=none (Triton's default) or poll" in mode.why_not
    assert "--model-control-mode=explicit" in mode.why_not and "TRITON_MODEL_CONTROL_MODE=poll" in mode.why_not


def test_an_environment_override_names_the_mode_the_process_cannot_tell(forwarded, poll_server):
    env = {"TRITON_MODEL_CONTROL_MODE": "poll", "TRITON_REPOSITORY_POLL_SECS": "1"}
    mode = detect(forwarded, poll_server.repo, environ=env)
    assert (mode.mode, mode.poll_s, mode.repository) == ("poll", 1.0, poll_server.repo), mode
    assert mode.can_apply and "TRITON_MODEL_CONTROL_MODE=poll" in mode.how
    unplaced = detect(forwarded, environ={"TRITON_MODEL_CONTROL_MODE": "poll"})
    assert unplaced.mode == "poll" and unplaced.poll_s == 15.0 and not unplaced.can_apply, unplaced
    assert "TRITON_MODEL_REPOSITORY" in unplaced.why_not
    none = detect(forwarded, poll_server.repo, environ={"TRITON_MODEL_CONTROL_MODE": "None"})
    assert none.mode == "none" and not none.can_apply


def test_an_override_the_server_contradicts_or_that_is_malformed_is_said(forwarded):
    wrong = detect(forwarded, environ={"TRITON_MODEL_CONTROL_MODE": "explicit"})
    assert wrong.mode == "unknown" and "TRITON_MODEL_CONTROL_MODE=explicit" in wrong.why_not, wrong
    bad = detect(forwarded, environ={"TRITON_MODEL_CONTROL_MODE": "sometimes"})
    assert bad.mode == "unknown" and "TRITON_MODEL_CONTROL_MODE must be none, poll or explicit" in bad.why_not
    secs = detect(forwarded, environ={"TRITON_MODEL_CONTROL_MODE": "poll", "TRITON_REPOSITORY_POLL_SECS": "soon"})
    assert secs.mode == "unknown" and "TRITON_REPOSITORY_POLL_SECS" in secs.why_not


def test_a_dead_url_is_unknown_without_raising():
    port = free_port()  # nothing listens there
    mode = detect(Endpoint(f"http://127.0.0.1:{port}", f"127.0.0.1:{port}", ""), environ={})
    assert mode.mode == "unknown" and not mode.can_apply and "does not answer" in mode.why_not, mode
    assert "TRITON_URL" in mode.why_not


def test_an_http_server_that_is_not_triton_is_unknown(tmp_path):
    import http.server  # noqa: PLC0415

    class Quiet(http.server.SimpleHTTPRequestHandler):  # answers POST with 501
        def log_message(self, *args) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        mode = detect(Endpoint(f"http://127.0.0.1:{server.server_port}", "", ""), environ={})
    finally:
        server.shutdown()
        server.server_close()
    assert mode.mode == "unknown" and "HTTP 501" in mode.how and "proxy" in mode.why_not, mode
