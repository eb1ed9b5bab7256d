"""Test helpers: an event loop on virtual time, a connection pool that answers after a delay, and a real socket
server for the closed loop's threads."""
from __future__ import annotations

import asyncio
import socket
import threading
import time
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


class StubServer:
    """A real HTTP/1.1 keep-alive server on 127.0.0.1 (free port) for the closed loop's worker threads: answers
    every request 200 after delay_s (never, with hang), and notes when each request arrived and was answered."""

    def __init__(self, delay_s: float = 0.01, hang: bool = False) -> None:
        self.delay_s, self.hang = delay_s, hang
        self.lock = threading.Lock()
        self.spans: list[tuple[float, float]] = []  # (arrived, answered) on time.monotonic
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = ("127.0.0.1", self.port)
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn) -> None:
        buf = b""
        with conn:
            while not self._closing.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(rest) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    rest += chunk
                buf = rest[length:]
                arrived = time.monotonic()
                if self.hang:
                    self._closing.wait()
                    return
                time.sleep(self.delay_s)
                answered = time.monotonic()
                with self.lock:
                    self.spans.append((arrived, answered))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    def close(self) -> None:
        self._closing.set()
        self.sock.close()
