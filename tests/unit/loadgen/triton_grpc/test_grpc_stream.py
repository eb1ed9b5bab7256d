"""A stream slot, fed by hand: answers go to the request with their id and end it at the final one; a call cancelled
under the reader fails its requests; open-loop requests share streams up to a limit."""
from __future__ import annotations

import asyncio

from loadgen.triton_grpc.grpc_stream import Pending, StreamSlot, StreamSlots
from tests.unit.loadgen.triton_grpc.answers import answer


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
