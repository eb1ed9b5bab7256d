"""How a request ended, the kinds of failure Triton's answers stand for, and a failure's own words."""
from __future__ import annotations

import re
from enum import StrEnum

from loadgen.connection import Response
from loadgen.inputs.payload import error_message


class Outcome(StrEnum):
    """The end of one attempt."""

    OK = "ok"
    REJECTED = "rejected"  # the server shed it: queue timeout (REJECT) or queue full
    TIMEOUT = "timeout"  # the client gave up waiting
    ERROR = "error"  # any other failure: HTTP error, connection lost
    WRONG_OUTPUT = "wrong_output"  # answered, but the answer is wrong (stateful checks)
    CANCELLED = "cancelled"  # still in flight when the run stopped


FAILED = (Outcome.REJECTED, Outcome.TIMEOUT, Outcome.ERROR, Outcome.WRONG_OUTPUT)

# Triton's messages for requests it sheds (HTTP 503 in 2.51).
_SHED = {"Request timeout expired": "queue_timeout", "Exceeds maximum queue size": "queue_full"}
DETAIL_CHARS = 300  # a failure's words kept per record: the cause comes first in Triton's texts
_REQUEST_ID = re.compile(r"^\[request id: [^\]]*\]\s*")  # Triton's prefix, the same on every text: no news


def shed_kind(message: str) -> str | None:
    """Return the kind of a server's refusal that sheds load (queue timeout, queue full), None for other errors."""
    return next((kind for text, kind in _SHED.items() if text in message), None)


def classify(response: Response) -> tuple[Outcome, str]:
    """Return (outcome, error kind) of an HTTP response; the kind is '' for successes."""
    if response.status == 200:
        return Outcome.OK, ""
    shed = shed_kind(error_message(response))
    return (Outcome.REJECTED, shed) if shed else (Outcome.ERROR, f"http_{response.status}")


def classify_exception(exc: BaseException) -> tuple[Outcome, str]:
    """Return (outcome, error kind) of a request that got no response."""
    if isinstance(exc, TimeoutError):
        return Outcome.TIMEOUT, "client_timeout"
    return Outcome.ERROR, "connection"


def cut(text: str, limit: int = DETAIL_CHARS) -> str:
    """Return text on one line, cut to limit characters (an ellipsis says it was cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def server_words(text: str) -> str:
    """Return Triton's error text without its request-id prefix, cut short (any protocol's failures)."""
    return cut(_REQUEST_ID.sub("", text))


def response_detail(response: Response) -> str:
    """Return the server's words for a failed HTTP response, cut short."""
    return server_words(error_message(response)) or f"HTTP {response.status} with an empty body"


def exception_detail(exc: BaseException) -> str:
    """Return a short description of a request that got no response."""
    if isinstance(exc, TimeoutError):
        return cut(str(exc) or "no response in time (the client's timeout)")
    return cut(str(exc) or type(exc).__name__)
