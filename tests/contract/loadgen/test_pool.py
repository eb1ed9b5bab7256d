"""The connection pool against a tiny HTTP responder on a local socket: limits, waiting, hand-over, refusal."""
from __future__ import annotations

import asyncio

import pytest

from loadgen.connection import Response
from loadgen.pool import ConnectionPool

REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


async def responder():
    async def handle(reader, writer):
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(REPLY)
            await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_limit_queues_callers_and_hands_connections_over():
    async def main():
        server, port = await responder()
        pool = ConnectionPool(f"http://127.0.0.1:{port}", limit=2)
        a, b = await pool.acquire(), await pool.acquire()
        waiting = [asyncio.ensure_future(pool.acquire()) for _ in range(3)]
        await asyncio.sleep(0.01)
        assert pool.opened == 2 and not any(w.done() for w in waiting)
        waiting[0].cancel()
        await asyncio.sleep(0)
        pool.release(a)  # skips the cancelled caller
        assert await waiting[1] is a
        pool.discard(b)  # frees a slot: the next caller opens a new connection
        c = await waiting[2]
        assert c is not b and pool.opened == 3
        assert await c.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == Response(200, b"ok")
        pool.close()
        server.close()

    asyncio.run(main())


def test_refused_connection_is_a_connection_error():
    async def main():
        server, port = await responder()
        server.close()
        await server.wait_closed()
        with pytest.raises(ConnectionError, match="cannot connect"):
            await ConnectionPool(f"http://127.0.0.1:{port}").acquire()

    asyncio.run(main())
