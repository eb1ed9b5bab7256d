"""A real HTTP/1.1 keep-alive server on 127.0.0.1 for the closed loop's worker threads (their blocking sockets)."""
from __future__ import annotations

import socket
import threading


class StubServer:
    """Answer every request 200 at once, or, with hold, only when release() lets the requests held so far go (close()
    drops them unanswered); count the requests that arrived and those answered."""

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.lock = threading.Lock()
        self.arrived = self.answered = 0
        self._held: list[threading.Event] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = ("127.0.0.1", self.sock.getsockname()[1])
        self._closing = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def release(self) -> None:
        """Answer every request held now."""
        with self.lock:
            held, self._held = self._held, []
        for event in held:
            event.set()

    def close(self) -> None:
        self._closing.set()
        self.release()
        self.sock.close()

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
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
                released = threading.Event()
                with self.lock:
                    self.arrived += 1
                    if self.hold:
                        self._held.append(released)
                if self.hold:
                    released.wait()
                if self._closing.is_set():
                    return
                with self.lock:
                    self.answered += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
