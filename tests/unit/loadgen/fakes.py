"""Unit-tier helpers: an event loop on virtual time, and a connection pool that answers after a delay on it."""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from loadgen.connection import Response


def virtual_loop(start: float = 1000.0) -> asyncio.AbstractEventLoop:
    """Return an event loop whose clock jumps to the next timer instead of sleeping."""
    loop = asyncio.new_event_loop()
    now = [start]
    real_select = loop._selector.select  # noqa: SLF001 - test-only time travel

    def select(timeout=None):
        if timeout is None:
            raise RuntimeError("the virtual loop would wait forever: nothing is scheduled")
        now[0] += max(timeout, 0.0)
        return real_select(0)

    loop.time = lambda: now[0]
    loop._selector.select = select  # noqa: SLF001
    return loop


def run_virtual(coro_fn: Callable, start: float = 1000.0):
    """Run coro_fn() on a fresh virtual loop and return its result."""
    loop = virtual_loop(start)
    try:
        return loop.run_until_complete(coro_fn())
    finally:
        loop.close()


class FakeConnection:
    """Answers every request after service(data) seconds, or times out like the real connection."""

    def __init__(self, pool: FakePool) -> None:
        self.pool, self.alive = pool, True

    def request(self, data: bytes, timeout_s: float | None = None) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        delay, response = self.pool.answer(data)
        self.pool.in_flight += 1
        self.pool.max_in_flight = max(self.pool.max_in_flight, self.pool.in_flight)

        def finish(result):
            self.pool.in_flight -= 1
            if not fut.done():
                (fut.set_exception if isinstance(result, BaseException) else fut.set_result)(result)

        if timeout_s is not None and delay > timeout_s:
            loop.call_later(timeout_s, finish, TimeoutError("fake timeout"))
        else:
            loop.call_later(delay, finish, response)
        return fut

    def close(self) -> None:
        self.alive = False


class FakePool:
    """Stands in for ConnectionPool: unlimited connections, scripted answers."""

    def __init__(self, service_s: float = 0.01, status: int = 200, body: bytes = b"{}") -> None:
        self.service_s, self.status, self.body = service_s, status, body
        self.in_flight = self.max_in_flight = self.requests = 0

    def answer(self, data: bytes) -> tuple[float, Response]:
        self.requests += 1
        return self.service_s, Response(self.status, self.body)

    async def acquire(self) -> FakeConnection:
        return FakeConnection(self)

    def release(self, conn) -> None:
        pass

    def discard(self, conn) -> None:
        conn.close()
