"""The gRPC stream requests, encoded once, and the pure parts of the stream path: answers matched by id, outcomes,
the server's address."""
from __future__ import annotations

import asyncio
from random import Random

import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from loadgen.classes import make_target
from loadgen.triton_grpc.grpc_path import StreamPath, _classify, grpc_target
from loadgen.triton_grpc.grpc_request import carries_data, encode_request, is_final, with_id
from loadgen.triton_grpc.grpc_stream import Pending, StreamSlot, StreamSlots
from loadgen.outcome import Outcome
from loadgen.records import RecordBus


def parsed(data: bytes) -> service_pb2.ModelInferRequest:
    return service_pb2.ModelInferRequest.FromString(data)


def test_a_request_carries_its_tensors_its_parameters_and_asks_for_the_final_flag():
    tensors = [("COUNT", "INT32", np.array([[3]], np.int32)), ("TEXT", "BYTES", np.array([b"ab", b"c"], object))]
    request = parsed(encode_request("fanout", tensors, {"priority": 2, "timeout": 5000}))
    assert request.model_name == "fanout" and request.id == ""
    assert [(t.name, t.datatype, list(t.shape)) for t in request.inputs] == [("COUNT", "INT32", [1, 1]),
                                                                            ("TEXT", "BYTES", [2])]
    assert request.raw_input_contents[0] == (3).to_bytes(4, "little")
    assert request.raw_input_contents[1] == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"  # Triton's length-prefixed BYTES
    assert request.parameters["priority"].uint64_param == 2  # as tritonclient sends them
    assert request.parameters["timeout"].int64_param == 5000
    assert request.parameters["triton_enable_empty_final_response"].bool_param


def test_with_id_sets_the_id_and_keeps_the_rest():
    base = encode_request("m", [("X", "FP32", np.ones(2, np.float32))])
    request = parsed(with_id(base, "42"))
    assert request.id == "42" and request.model_name == "m" and len(request.raw_input_contents) == 1
    assert parsed(with_id(base, "43")).id == "43"


def answer(request_id: str, final: bool = False, outputs: int = 1,
           error: str = "") -> service_pb2.ModelStreamInferResponse:
    response = service_pb2.ModelStreamInferResponse(error_message=error)
    response.infer_response.id = request_id
    for i in range(outputs):
        response.infer_response.outputs.add(name=f"OUT{i}", datatype="INT32", shape=[1])
    if final:
        response.infer_response.parameters["triton_final_response"].bool_param = True
    return response


def test_the_empty_final_response_is_no_data_but_a_final_one_with_outputs_is():
    assert not is_final(answer("1").infer_response) and carries_data(answer("1").infer_response)
    assert is_final(answer("1", final=True, outputs=0).infer_response)
    assert not carries_data(answer("1", final=True, outputs=0).infer_response)
    assert carries_data(answer("1", final=True, outputs=1).infer_response)


def test_answers_go_to_the_request_with_their_id_and_end_it_at_the_final_one():
    async def feed():
        now = [10.0]
        slot = StreamSlot("unused:1", lambda: now[0])
        a, b = Pending(asyncio.get_running_loop().create_future()), Pending(asyncio.get_running_loop().create_future())
        slot.pending.update({"a": a, "b": b})
        for t, response in ((10.5, answer("a")), (10.7, answer("b")), (10.9, answer("a")),
                            (11.0, answer("a", final=True, outputs=0)), (11.2, answer("b", error="boom")),
                            (11.3, answer("b")), (11.4, answer("gone"))):
            now[0] = t
            slot._take(response)  # noqa: SLF001 - the reader's one step, fed by hand
        return a, b, slot

    a, b, slot = asyncio.run(feed())
    assert (a.first, a.responses, a.end, a.kind) == (10.5, 2, 11.0, "") and a.done.done()
    assert (b.first, b.responses, b.end, b.kind, b.error) == (10.7, 1, 11.2, "server", "boom")
    assert slot.pending == {}  # ended requests leave; answers after the end (and unknown ids) are dropped


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


class CancelledCall:
    """A call gRPC cancelled (it does so to the whole call when a write is cancelled mid-way): read() raises."""

    def cancel(self) -> None:
        pass

    async def read(self):
        raise asyncio.CancelledError


def test_a_call_cancelled_under_the_reader_fails_its_requests_instead_of_leaving_them_waiting():
    async def read():
        slot = StreamSlot("unused:1", lambda: 5.0)
        slot._call = call = CancelledCall()  # noqa: SLF001 - the stream as gRPC left it
        waiting = Pending(asyncio.get_running_loop().create_future())
        slot.pending["1"] = waiting
        await slot._read(call)  # noqa: SLF001
        return waiting, slot

    waiting, slot = asyncio.run(read())
    assert (waiting.kind, waiting.end, waiting.error) == ("connection", 5.0, "the stream was cancelled")
    assert slot.pending == {} and slot._call is None  # noqa: SLF001 - the next write opens a new stream


def test_open_loop_requests_take_an_idle_stream_open_one_up_to_the_limit_then_share_the_least_busy():
    slots = StreamSlots("unused:1", lambda: 0.0, limit=2)
    first = slots.slot()
    assert slots.slot() is first  # idle: reused
    first.pending.update({"1": None, "2": None})
    second = slots.slot()
    assert second is not first and len(slots.shared) == 2
    second.pending["3"] = None
    assert slots.slot() is second and len(slots.shared) == 2  # at the limit: the least busy
    assert slots.slot(0) is slots.slot(0) and slots.slot(0) is not slots.slot(1)  # a closed-loop worker's own


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
