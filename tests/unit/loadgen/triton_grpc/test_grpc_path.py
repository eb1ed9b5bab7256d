"""The stream path's pure parts: an ended request classified like the HTTP paths', the server's gRPC address, and a
final response after the deadline counted as a timeout however the loop saw it."""
from __future__ import annotations

import asyncio
from random import Random

import pytest

from loadgen.classes import make_target
from loadgen.outcome import Outcome
from loadgen.records import RecordBus
from loadgen.triton_grpc.grpc_path import StreamPath, _classify, grpc_target
from loadgen.triton_grpc.grpc_stream import Pending


@pytest.mark.parametrize(("kind", "text", "expected"), [
    ("", "", (Outcome.OK, "", "")),
    ("server", "[request id: 7] Request timeout expired",
     (Outcome.REJECTED, "queue_timeout", "Request timeout expired")),
    ("server", "Exceeds maximum queue size", (Outcome.REJECTED, "queue_full", "Exceeds maximum queue size")),
    ("server", "[request id: 9] unexpected shape", (Outcome.ERROR, "server_error", "unexpected shape")),
    ("connection", "gRPC CANCELLED: x", (Outcome.ERROR, "connection", "gRPC CANCELLED: x")),
])
def test_an_ended_request_is_classified_like_the_http_paths(kind, text, expected):
    pending = Pending(None)
    pending.kind, pending.error = kind, text
    assert _classify(pending) == expected


def test_the_grpc_address_is_given_read_from_the_environment_or_triton_s_default_pair():
    assert grpc_target("http://h:9000", "grpc://g:7001") == "g:7001"
    assert grpc_target("http://h:9000", None, {"TRITON_GRPC_URL": "e:7002"}) == "e:7002"
    assert grpc_target("http://h:8000", None, {}) == "h:8001"
    with pytest.raises(ValueError, match="TRITON_GRPC_URL"):
        grpc_target("http://h:9000", None, {})


class AnsweredSlot:
    """A stream slot whose request went out at 10.0 and was answered at `end` on the stream's own clock."""

    def __init__(self, end: float) -> None:
        self.end = end

    async def write(self, request_id, request, pending):
        pending.finish(self.end)
        return 10.0

    def forget(self, request_id):
        pass


@pytest.mark.parametrize(("answered_after", "expected"), [
    (0.004, (Outcome.OK, "")),
    (0.02, (Outcome.TIMEOUT, "client_timeout")),  # ended past the deadline, though the loop saw it before its timer
])
def test_a_final_response_after_the_deadline_is_a_timeout_however_the_loop_saw_it(answered_after, expected):
    async def main():
        slots = type("Slots", (), {"slot": lambda self, key: AnsweredSlot(10.0 + answered_after)})()
        path = StreamPath(slots, RecordBus(), clock=lambda: 10.0, t0=0.0, rng=Random(1))
        return await path.send(make_target("c", "m", 0, timeout_ms=10.0), b"")

    record = asyncio.run(main())
    assert (record.outcome, record.error) == expected, record
    assert record.latency_s == pytest.approx(answered_after)
