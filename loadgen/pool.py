"""Keep-alive connections to one server, opened on demand up to a limit."""
from __future__ import annotations

import asyncio
from collections import deque
from urllib.parse import urlparse

from loadgen.connection import ConnectError, Connection


def host_port(url: str) -> tuple[str, int]:
    """Return (host, port) of an http:// URL or a bare host:port."""
    parsed = urlparse(url if "://" in url else f"http://{url}")
    if parsed.scheme != "http" or not parsed.hostname:
        raise ValueError(f"the load generator speaks plain http://HOST:PORT, got {url!r}")
    return parsed.hostname, parsed.port or 80


class ConnectionPool:
    """Hand out idle connections; open new ones up to `limit`, beyond which callers wait."""

    def __init__(self, url: str, limit: int = 1024, connect_timeout_s: float = 5.0) -> None:
        self.host, self.port = host_port(url)
        self.limit = limit
        self.connect_timeout_s = connect_timeout_s
        self.opened = 0
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()
        self._waiters: deque[asyncio.Future] = deque()

    async def acquire(self) -> Connection:
        """Return a connected Connection (ConnectionError when the server is unreachable)."""
        while True:
            while self._idle:
                conn = self._idle.pop()
                if conn.alive:
                    return conn
                self._all.discard(conn)
            if len(self._all) < self.limit:
                return await self._open()
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                conn = await waiter  # a connection handed over, or None: a slot is free
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    self.release(waiter.result())  # handed over just as we gave up: pass it on
                raise
            if conn is not None:
                return conn

    async def _open(self) -> Connection:
        loop = asyncio.get_running_loop()
        placeholder = Connection()
        self._all.add(placeholder)  # holds the slot while connecting
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(Connection, self.host, self.port), self.connect_timeout_s
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise ConnectError(f"cannot connect to {self.host}:{self.port}: {exc or 'timed out'}") from exc
        finally:
            self._all.discard(placeholder)
        self.opened += 1
        self._all.add(conn)
        return conn

    def release(self, conn: Connection) -> None:
        """Give back a connection after a complete response."""
        if not conn.alive:
            self.discard(conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def discard(self, conn: Connection) -> None:
        """Close a connection that cannot carry another request."""
        conn.close()
        self._all.discard(conn)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def close(self) -> None:
        """Close every connection."""
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()

