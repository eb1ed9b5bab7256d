"""Pick TCP ports on 127.0.0.1 without assuming any is free."""
from __future__ import annotations

import socket


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Return True when nothing listens on host:port and it can be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """Return a port the kernel reports free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def choose_ports(preferred: tuple[int | None, ...], host: str = "127.0.0.1") -> tuple[int, ...]:
    """Return one distinct free port per preference: the preferred one when free, else any."""
    chosen: list[int] = []
    for want in preferred:
        port = want if want and is_free(want, host) and want not in chosen else None
        while port is None or port in chosen:
            port = free_port(host)
        chosen.append(port)
    return tuple(chosen)
