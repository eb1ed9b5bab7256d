"""A minimal HTTP/1.1 keep-alive client: one request at a time per connection, pre-built bytes."""
from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass


class ConnectError(ConnectionError):
    """No connection could be opened: the server is down or not there."""


class ProtocolError(ConnectionError):
    """The server's answer is not HTTP/1.1 this client can read."""


@dataclass(frozen=True, slots=True)
class Response:
    """Status, body and the JSON header length of Triton's binary tensor extension (0 when absent)."""

    status: int
    body: bytes
    header_length: int = 0


class ResponseReader:
    """HTTP/1.1 response framing: feed bytes as they arrive; a whole Response comes out when it is complete."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._head_end = -1
        self._length = 0
        self._status = 0
        self._header_length = 0

    def feed(self, data: bytes) -> Response | None:
        """Take more bytes; return the response once complete (ProtocolError when it cannot be read)."""
        buf = self._buf
        buf += data
        if self._head_end < 0 and not self._parse_head():
            return None
        end = self._head_end + self._length
        if len(buf) < end:
            return None
        if len(buf) > end:
            raise ProtocolError("unexpected bytes after a response")
        response = Response(self._status, bytes(buf[self._head_end:end]), self._header_length)
        buf.clear()
        self._head_end = -1
        return response

    def _parse_head(self) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self._buf[:end]).split(b"\r\n")
        try:
            self._status = int(lines[0].split(b" ", 2)[1])
            headers = dict(line.split(b":", 1) for line in lines[1:])
            headers = {k.strip().lower(): v.strip() for k, v in headers.items()}
            self._length = int(headers[b"content-length"])
            self._header_length = int(headers.get(b"inference-header-content-length", 0))
        except (IndexError, KeyError, ValueError):
            raise ProtocolError(f"cannot read response head {bytes(self._buf[:200])!r}") from None
        self._head_end = end + 4
        return True


class BlockingConnection:
    """The same requests and framing over a blocking socket: the closed loop's worker threads, and Locust (where
    gevent makes it cooperative)."""

    def __init__(self, host: str, port: int, connect_timeout_s: float = 5.0) -> None:
        self.address = (host, port)
        self.connect_timeout_s = connect_timeout_s
        self.sock: socket.socket | None = None

    def request(self, data: bytes, timeout_s: float | None = None) -> Response:
        """Send a pre-built request, return its Response within timeout_s in all; TimeoutError or ConnectionError
        (the connection is then dropped, so a late answer never reaches the next request)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        reader = ResponseReader()
        try:
            sock = self._connected()
            sock.sendall(data)
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("connection closed by the server")
                response = reader.feed(chunk)
                if response is not None:
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError  # read after the deadline (a busy host): the client had given up
                    return response
        except TimeoutError as exc:
            self.close()
            raise TimeoutError(f"no response within {timeout_s:g} s") from exc
        except (OSError, ProtocolError):
            self.close()
            raise

    def abort(self) -> None:
        """Fail the request in progress now, from any thread (a blocked recv returns at once)."""
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _connected(self) -> socket.socket:
        if self.sock is None:
            try:
                sock = socket.create_connection(self.address, timeout=self.connect_timeout_s)
            except OSError as exc:
                raise ConnectError(f"cannot connect to {self.address[0]}:{self.address[1]}: {exc}") from exc
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)
            self.sock = sock
        return self.sock


class Connection(asyncio.Protocol):
    """One TCP connection; request() writes a whole request and waits for the whole response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.alive = False
        self._reader = ResponseReader()
        self._waiter: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._deadline: float | None = None  # time.monotonic() when the request's time is up
        self._timeout_s = 0.0

    def connection_made(self, transport) -> None:
        self.transport, self.alive = transport, True
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, data: bytes, timeout_s: float | None = None) -> asyncio.Future:
        """Send data; return a future of the Response (TimeoutError, ConnectionError on failure)."""
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self.transport.write(data)
        self._deadline = None
        if timeout_s is not None:
            self._deadline, self._timeout_s = time.monotonic() + timeout_s, timeout_s
            self._timer = loop.call_later(timeout_s, self._fail, self._timed_out())
        return waiter

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"no response within {self._timeout_s:g} s")

    def data_received(self, data: bytes) -> None:
        try:
            response = self._reader.feed(data)
        except ProtocolError as exc:
            self._fail(exc)
            return
        if response is None:
            return
        if self._waiter is None:
            self._fail(ProtocolError("unexpected bytes after a response"))
            return
        if self._deadline is not None and time.monotonic() > self._deadline:
            # read after the deadline: the loop was late to both (a busy host) and ran the read before the timer
            self._fail(self._timed_out())
            return
        self._finish(response, None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        self._finish(None, ConnectionError(f"connection closed: {exc or 'by the server'}"))

    def close(self) -> None:
        """Drop the connection at once (a late response must not reach the next request)."""
        self.alive = False
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, exc: Exception) -> None:
        self.close()
        self._finish(None, exc)

    def _finish(self, response: Response | None, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            return
        if exc is None:
            waiter.set_result(response)
        else:
            waiter.set_exception(exc)
