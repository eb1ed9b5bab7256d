"""The stop's unload through the repository API is best effort: a server that does not answer is stopped as before,
and one that exited meanwhile is not waited for. (That the API unloads every model before the signal:
tests/contract/server/test_embedded.py.)"""
from __future__ import annotations

import socket

from app.server.embedded import unload_all
from app.server.endpoint import Endpoint


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_does_not_answer_is_not_waited_for():
    port = closed_port()
    endpoint = Endpoint(f"http://127.0.0.1:{port}", f"127.0.0.1:{port}", f"http://127.0.0.1:{port}/metrics", "k")
    assert unload_all(endpoint, 5.0, lambda: None) is False


def test_a_server_that_exited_is_not_waited_for(monkeypatch):
    import app.server.embedded as embedded

    calls = []

    def answer(endpoint, path, timeout_s=2.0):
        calls.append(path)
        return [{"name": "m", "version": "1", "state": "UNLOADING"}] if path.endswith("index") else None
    monkeypatch.setattr(embedded, "repository_call", answer)
    assert unload_all(Endpoint("http://127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3/metrics"), 60.0,
                      lambda: 0) is False
    assert calls == ["/v2/repository/index", "/v2/repository/models/m/unload"], calls
