"""How a request ended, and the kinds of failure Triton's answers stand for."""
from __future__ import annotations

from enum import StrEnum

from loadgen.connection import Response
from loadgen.payload import error_message


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


def classify(response: Response) -> tuple[Outcome, str]:
    """Return (outcome, error kind) of an HTTP response; the kind is '' for successes."""
    if response.status == 200:
        return Outcome.OK, ""
    message = error_message(response)
    for text, kind in _SHED.items():
        if text in message:
            return Outcome.REJECTED, kind
    return Outcome.ERROR, f"http_{response.status}"


def classify_exception(exc: BaseException) -> tuple[Outcome, str]:
    """Return (outcome, error kind) of a request that got no response."""
    if isinstance(exc, TimeoutError):
        return Outcome.TIMEOUT, "client_timeout"
    return Outcome.ERROR, "connection"
