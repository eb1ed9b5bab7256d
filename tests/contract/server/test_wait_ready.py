"""Started means every port answers: Triton opens its metrics port after its HTTP port says ready."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.server.embedded import endpoint_at, wait_ready
from app.server.start_errors import ServerStartError
from tests.helpers import wait_until


class _Answers(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the handler's name
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _bound_not_listening() -> ThreadingHTTPServer:
    """A server whose port is bound but refuses connections until server_activate() (as Triton's, briefly)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers, bind_and_activate=False)
    server.server_bind()
    return server


@pytest.fixture
def ports():
    """Yield the HTTP server (serving), the metrics server (bound, refusing) and serve(server) to start one."""
    http, metrics, serving = _bound_not_listening(), _bound_not_listening(), []

    def serve(server: ThreadingHTTPServer) -> None:
        server.server_activate()  # listen
        threading.Thread(target=server.serve_forever, daemon=True).start()
        serving.append(server)  # shutdown() waits for serve_forever: only for those that run it

    serve(http)
    yield http, metrics, serve
    for server in serving:
        server.shutdown()
    for server in (http, metrics):
        server.server_close()


def _endpoint(http, metrics):
    return endpoint_at("127.0.0.1", (http.server_address[1], 1, metrics.server_address[1]))


def test_a_ready_http_port_is_not_enough_until_the_metrics_port_answers(ports):
    http, metrics, serve = ports
    looks, done, failed = [], threading.Event(), []

    def problem():
        looks.append(1)
        return None

    def wait():
        try:
            wait_ready(_endpoint(http, metrics), 60, problem, lambda: "")
        except BaseException as exc:  # noqa: BLE001 - shown by the assertion below
            failed.append(exc)
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    wait_until(lambda: len(looks) >= 4, 30, "four rounds of waiting (HTTP ready, metrics refusing)")
    assert not done.is_set(), (len(looks), failed)  # HTTP said ready rounds ago; metrics still refused
    serve(metrics)
    assert done.wait(30), f"wait_ready did not return after the metrics port answered ({len(looks)} rounds)"
    assert not failed, failed


def test_a_metrics_port_that_never_answers_is_named_in_the_error(ports):
    http, metrics, _ = ports
    with pytest.raises(ServerStartError) as err:
        wait_ready(_endpoint(http, metrics), 1.5, lambda: None, lambda: "the log's tail")
    message = str(err.value)
    assert f"not serving metrics at http://127.0.0.1:{metrics.server_address[1]}/metrics" in message, message
    assert "the log's tail" in message
