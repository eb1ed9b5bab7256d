"""The key that locks Triton's model-repository API (load, unload, index) on the servers the lab starts.

Triton 2.51 restricts a protocol to requests carrying a header with a given value (`--http-restricted-api`,
`--grpc-restricted-protocol`); without it, a load, an unload or an index is refused: HTTP 403 "This API is
restricted, expecting header 'x-tbl-control-key'", gRPC UNAVAILABLE "This protocol is restricted, expecting header
'triton-grpc-protocol-x-tbl-control-key'" (gRPC prefixes the name, measured on 2.51). The lab makes one random
value per process, starts its own servers with it, and sends it on every model-repository call; a remote server
locked the same way takes its value from TRITON_CONTROL_KEY.
"""
from __future__ import annotations

import secrets
import threading

HEADER = "x-tbl-control-key"  # the HTTP header; lower case, as gRPC metadata keys must be
GRPC_HEADER = f"triton-grpc-protocol-{HEADER}"  # Triton's gRPC server wants the key under this prefixed name
VARIABLE = "TRITON_CONTROL_KEY"
PROTOCOL = "model-repository"  # load, unload and the repository index (Triton's name, HTTP and gRPC alike)
LOCKED_TEXT = "is restricted, expecting header"  # Triton's refusal: "This API ..." (HTTP), "This protocol ..." (gRPC)
LOCKED_FIX = (f"the server's model-repository API is locked by a key (Triton's --http-restricted-api / "
              f"--grpc-restricted-protocol with header {HEADER}): set {VARIABLE} to the value the server was "
              "started with")

_key: str | None = None
_lock = threading.Lock()


def process_key() -> str:
    """Return this process's key (made once, 256 random bits): every server this process starts takes it."""
    global _key
    with _lock:
        if _key is None:
            _key = secrets.token_urlsafe(32)
        return _key


def lock_flags(key: str) -> tuple[str, ...]:
    """Return tritonserver's flags that refuse model-repository calls without the header carrying key."""
    if not key or any(c in key for c in ",:= \t\n"):
        raise ValueError("a control key (TRITON_CONTROL_KEY) must be non-empty, without , : = or spaces (Triton's "
                         "flag syntax)")
    return (f"--http-restricted-api={PROTOCOL}:{HEADER}={key}",
            f"--grpc-restricted-protocol={PROTOCOL}:{HEADER}={key}")


def key_headers(key: str | None, grpc: bool = False) -> dict[str, str]:
    """Return the HTTP headers (grpc: the gRPC metadata) that carry key; none without one."""
    return {GRPC_HEADER if grpc else HEADER: key} if key else {}


def is_locked(text: str) -> bool:
    """Return True when a server's answer is Triton's refusal of a restricted API (no key, or a wrong one)."""
    return LOCKED_TEXT in (text or "")
