"""The HTTP/1.1 client: the response reader fed bytes directly, keep-alive, failures, deadlines on an injected clock
(the event loop's, virtual; time.monotonic's, a Clock); the blocking connection over a socketpair."""
from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace

import pytest

from loadgen import connection
from loadgen.connection import BlockingConnection, Connection, ProtocolError, Response
from tests.helpers import Clock
from tests.unit.loadgen.fakes import run_virtual

OK = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nInference-Header-Content-Length: 5\r\n"
    b"Content-Length: 9\r\n\r\n{\"a\":1}xy"
)


class FakeTransport:
    def __init__(self):
        self.written, self.aborted = [], False

    def get_extra_info(self, name):
        return None

    def write(self, data):
        self.written.append(data)

    def abort(self):
        self.aborted = True


def connected() -> tuple[Connection, FakeTransport]:
    conn, transport = Connection(), FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def test_reads_a_response_split_anywhere():
    async def main():
        body = (
            b"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 3\r\ncontent-length: 7\r\n\r\n{ }abcd"
        )
        results = []
        for cut in range(1, len(body)):
            conn, transport = connected()
            fut = conn.request(b"GET")
            conn.data_received(body[:cut])
            assert not fut.done()
            conn.data_received(body[cut:])
            results.append(await fut)
        return results, transport

    results, transport = asyncio.run(main())
    assert set(results) == {Response(200, b"{ }abcd", 3)}
    assert transport.written == [b"GET"]


def test_keeps_alive_across_requests():
    async def main():
        conn, _ = connected()
        first = conn.request(b"1")
        conn.data_received(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno")
        second = conn.request(b"2")
        conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        return await first, await second

    assert asyncio.run(main()) == (Response(404, b"no", 0), Response(200, b"", 0))


def test_garbage_and_closed_connections_fail_the_request():
    async def main():
        conn, transport = connected()
        fut = conn.request(b"x")
        conn.data_received(b"nonsense\r\n\r\n")
        with pytest.raises(ProtocolError):
            await fut
        assert transport.aborted and not conn.alive
        conn, _ = connected()
        fut = conn.request(b"x")
        conn.connection_lost(None)
        with pytest.raises(ConnectionError):
            await fut

    asyncio.run(main())


def test_timeout_aborts_the_connection():
    async def main():
        conn, transport = connected()
        with pytest.raises(TimeoutError):
            await conn.request(b"x", timeout_s=0.01)  # the virtual loop's clock jumps to the timer
        return transport

    assert run_virtual(main).aborted


def test_a_response_read_after_the_deadline_is_a_timeout(monkeypatch):
    # A busy loop runs late: the answer and the timer are both due, and the loop reads first. The client had given
    # up by then (CI: a 1 ms timeout came back OK beside stress-ng), so the answer counts as a timeout.
    clock = Clock()
    monkeypatch.setattr(connection, "time", SimpleNamespace(monotonic=clock))

    async def main():
        conn, transport = connected()
        fut = conn.request(b"x", timeout_s=0.005)
        clock.now = 0.02  # the loop held up past the deadline
        conn.data_received(OK)
        with pytest.raises(TimeoutError, match="no response within 0.005 s"):
            await fut
        return transport, conn

    transport, conn = asyncio.run(main())
    assert transport.aborted and not conn.alive


def test_a_response_in_time_is_an_answer_whatever_the_timeout():
    async def main():
        conn, _ = connected()
        fut = conn.request(b"x", timeout_s=30.0)
        conn.data_received(OK)
        return await fut

    assert asyncio.run(main()).status == 200


def test_the_blocking_connection_keeps_its_deadline_for_an_answer_already_waiting(monkeypatch):
    # The thread was paused between its last look at the clock and its read: the answer was waiting when it read,
    # but the deadline had passed. Clock: 0 at the send (deadline 0.001), 0.0005 before the read, 0.01 after it.
    ticks = iter([0.0, 0.0005, 0.01, 0.01])
    monkeypatch.setattr(connection, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    ours, server = socket.socketpair()
    try:
        server.sendall(OK)  # the answer is in the buffer before the request is read
        conn = BlockingConnection("127.0.0.1", 1)
        conn.sock = ours
        with pytest.raises(TimeoutError, match="no response within 0.001 s"):
            conn.request(b"x", timeout_s=0.001)
        assert conn.sock is None  # dropped: nothing of this exchange reaches the next request
        ticks = iter([0.0, 0.0005, 0.0008])
        conn.sock, other = socket.socketpair()
        other.sendall(OK)
        assert conn.request(b"x", timeout_s=0.001).status == 200
        conn.close()
        other.close()
    finally:
        ours.close()
        server.close()
