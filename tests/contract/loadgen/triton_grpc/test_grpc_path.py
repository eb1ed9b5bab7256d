"""Decoupled models over the gRPC stream path against real servers: the third-party `fanout` (COUNT=n -> n responses
about 2 ms apart, then the final flag; tests/contract/loadgen/conftest.py) beside `two_inputs` (plain HTTP, in mixed
runs), and the lab's own token_sim (LENGTH=n -> tokens 0..n-1) on the session server. Every response counted, a
request past its timeout given up while its stream carries on, the server's refusals in its words, a stop cancels
what is in flight."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from random import Random

import numpy as np
import pytest

from app.server.free_ports import free_port
from loadgen.classes import make_target
from loadgen.inputs.metadata import ModelUnavailable
from loadgen.outcome import Outcome
from loadgen.pacer import LoopPacer
from loadgen.records import RecordBus
from loadgen.run import LoadRun
from loadgen.spec import ArrivalSpec, LoadSpec, Mode, SequenceSpec, TrafficClass
from loadgen.triton_grpc.grpc_path import StreamPath
from loadgen.triton_grpc.grpc_request import encode_request, with_id
from loadgen.triton_grpc.grpc_stream import Pending, StreamSlot, StreamSlots
from tests.contract.loadgen.fanout_kit import count_class, run

pytestmark = pytest.mark.xdist_group("third-party-server")  # one worker starts that server (conftest.py)


@pytest.fixture
def fanout(third_party):
    return third_party


@pytest.fixture
def data(tmp_path):
    return tmp_path


def failures(records) -> Counter:
    return Counter((r.outcome.value, r.error, r.detail) for r in records if r.outcome is not Outcome.OK)


def check_counts(records, summary, counts: dict[str, int]) -> None:
    """Every request got its class's COUNT of responses, the first no later than the final one; the statistics
    count the sum of the COUNTs sent."""
    wrong = Counter((r.cls, r.responses) for r in records if r.responses != counts[r.cls])
    assert not wrong, f"requests whose responses differ from the COUNT sent (class, responses): {wrong}"
    assert all(0 < r.first_s <= r.latency_s for r in records if r.responses), records[:3]
    per_class = Counter(r.cls for r in records)
    expected = sum(counts[cls] * n for cls, n in per_class.items())
    assert summary["all"]["responses"] == expected, (summary["all"]["responses"], expected, per_class)


def test_closed_loop_gets_every_response_of_every_request(fanout, data):
    classes = (count_class(data, "three", 3), count_class(data, "seven", 7))
    # a count, not a duration: ~140 s into a slow first pass a 2.5 s run got 20 answers (2026-12-04)
    spec = LoadSpec(model="fanout", concurrency=4, duration_s=None, max_requests=60, classes=classes, seed=1)
    records, summary = run(fanout, spec)
    assert len(records) == 60 and not failures(records), failures(records)
    check_counts(records, summary, {"three": 3, "seven": 7})
    row = summary["all"]
    assert row["first_n"] == row["ok"] and row["gap_n"] == row["ok"]  # every request streamed 2+ responses
    assert row["responses_rps"] == pytest.approx(row["responses"] / row["elapsed_s"])


def test_open_loop_gets_every_response_and_keeps_its_schedules_slots(fanout, data):
    classes = (count_class(data, "two", 2), count_class(data, "five", 5))
    spec = LoadSpec(mode=Mode.OPEN, rate=40.0, arrival=ArrivalSpec(kind="constant"), model="fanout",
                    duration_s=None, max_requests=40, classes=classes, seed=2)
    records, summary = run(fanout, spec)
    assert len(records) == 40 and not failures(records), failures(records)
    check_counts(records, summary, {"two": 2, "five": 5})
    slots = np.diff(sorted(r.scheduled_s for r in records))
    assert np.allclose(slots, 1 / 40.0), f"scheduled slots are not 25 ms apart: {slots[:10]}"


class LatePacer(LoopPacer):
    """Oversleep every wait by 5 ms."""

    async def wait_until(self, when: float) -> None:
        await super().wait_until(when + 0.005)


def test_a_send_after_its_slot_is_marked_late(fanout, data):
    """A pacer that oversleeps every wait by 5 ms: the first send goes out at least 5 ms after its slot; each is
    marked late exactly when it went out more than late_after_ms (1 ms) after its slot, and the statistics count
    them. (How late a live loop sends is a measurement: bench/vs_perf_analyzer.py's open loop.)"""
    spec = LoadSpec(mode=Mode.OPEN, rate=20.0, arrival=ArrivalSpec(kind="constant"), model="fanout", duration_s=None,
                    max_requests=10, classes=(count_class(data, "one", 1),))
    records, summary = run(fanout, spec, pacer=LatePacer())
    assert len(records) == 10 and not failures(records), failures(records)
    records.sort(key=lambda r: r.scheduled_s)
    lateness = [round(r.lateness_s, 4) for r in records]
    assert records[0].lateness_s >= 0.005 - 1e-6 and records[0].late, lateness
    assert all(r.sent_s >= r.scheduled_s - 1e-6 for r in records), lateness  # never early
    assert [r.late for r in records] == [r.lateness_s > 0.001 for r in records], lateness
    assert summary["all"]["late"] == sum(r.late for r in records), (summary["all"], lateness)


def test_a_request_past_its_timeout_is_given_up_and_its_stream_carries_on(fanout, data):
    slow = count_class(data, "slow", 30, timeout_ms=10.0)  # 30 responses take 60 ms or more
    quick = count_class(data, "quick", 2)
    spec = LoadSpec(model="fanout", concurrency=2, duration_s=None, max_requests=30, classes=(slow, quick), seed=3,
                    stop_when_all_fail_s=None)
    records, summary = run(fanout, spec)
    by_class = {cls: Counter((r.outcome.value, r.responses if r.outcome is Outcome.OK else r.error) for r in records
                             if r.cls == cls) for cls in ("slow", "quick")}
    assert set(by_class["slow"]) == {("timeout", "client_timeout")}, by_class
    assert set(by_class["quick"]) == {("ok", 2)}, by_class  # the slow requests' late responses went to nobody
    detail = next(r.detail for r in records if r.cls == "slow")
    assert "no final response within 0.01 s" in detail, detail
    assert summary["slow"]["responses"] == 0  # a failed request's responses are not counted


def test_the_servers_refusal_comes_back_in_its_own_words_and_the_stream_serves_on(fanout):
    # Each refusal on a stream of its own: tritonserver 2.51 aborts (proto_buffer_writer.h:65 ASSERTION FAILED:
    # !byte_buffer->Valid(), Signal 6) now and then when one ModelStreamInfer stream carries a wrong-shape refusal and
    # then an unknown model's (1 to 150 rounds in 300, 2026-12-06); one refusal then an answer never did (600 rounds).
    async def send_all():
        loop = asyncio.get_running_loop()
        slots = StreamSlots(fanout.grpc_url, loop.time)
        path = StreamPath(slots, RecordBus(), loop.time, loop.time(), Random(0))
        target = make_target("probe", "fanout", 0, 5000.0)
        good = encode_request("fanout", [("COUNT", "INT32", np.array([2], np.int32))])
        wrong_shape = encode_request("fanout", [("COUNT", "INT32", np.array([1, 2], np.int32))])
        unknown = encode_request("no_such_model", [("COUNT", "INT32", np.array([1], np.int32))])
        try:
            return [await path.send(target, data, slot=slot)
                    for slot, refused in enumerate((wrong_shape, unknown)) for data in (refused, good)]
        finally:
            await slots.close()

    shape, after_shape, unknown, after_unknown = asyncio.run(send_all())
    assert (shape.outcome, shape.error) == (Outcome.ERROR, "server_error"), shape
    assert "unexpected shape for input 'COUNT'" in shape.detail and not shape.detail.startswith("[request id"), shape
    assert (unknown.outcome, unknown.error) == (Outcome.ERROR, "server_error"), unknown
    assert "unknown model" in unknown.detail and "no_such_model" in unknown.detail, unknown
    for good in (after_shape, after_unknown):
        assert (good.outcome, good.responses) == (Outcome.OK, 2), good  # the same stream serves on


def test_an_unreachable_grpc_address_fails_before_the_run_and_names_it(fanout, data):
    port = free_port("127.0.0.1")
    spec = LoadSpec(model="fanout", concurrency=1, duration_s=1.0, classes=(count_class(data, "one", 1),))
    run_ = LoadRun(spec, fanout.http_url, grpc_url=f"127.0.0.1:{port}")
    with pytest.raises(ModelUnavailable, match=f"gRPC 127.0.0.1:{port}: UNAVAILABLE"):
        asyncio.run(run_.run())


def test_a_stream_that_cannot_connect_is_a_connect_error():
    async def send_one():
        loop = asyncio.get_running_loop()
        slots = StreamSlots(f"127.0.0.1:{free_port('127.0.0.1')}", loop.time)
        path = StreamPath(slots, RecordBus(), loop.time, loop.time(), Random(0))
        try:
            return await path.send(make_target("probe", "fanout", 0, 5000.0), encode_request("fanout", []))
        finally:
            await slots.close()

    record = asyncio.run(send_one())
    assert (record.outcome, record.error) == (Outcome.ERROR, "connect") and "cannot connect to" in record.detail, record
    assert record.latency_s < 1.0, record  # refused at once, not after the connect timeout


@pytest.mark.parametrize("mode", [Mode.CLOSED, Mode.OPEN])
def test_a_stop_cancels_the_streams_in_flight(fanout, data, mode):
    # Requests of 40, 52 or 64 responses 2 ms apart (80-130 ms or more), drawn at random: 4 or more out at any moment
    # in both modes, out of step. (All of one COUNT let 3 closed-loop workers in lockstep end their 4th requests just
    # as a 0.5 s run's stop came: one stream cancelled with all 60 responses. A 30 ms run was shorter than opening the
    # stream beside stress-ng --cpu 1: no request sent.)
    counts = {f"n{n}": n for n in (40, 52, 64)}
    classes = tuple(count_class(data, name, n) for name, n in counts.items())
    spec = LoadSpec(mode=mode, rate=40.0, arrival=ArrivalSpec(kind="constant"), model="fanout", concurrency=4,
                    duration_s=0.5, drain_s=0.01, classes=classes, seed=7)
    records, _ = run(fanout, spec)
    outcomes = Counter(r.outcome.value for r in records)
    assert outcomes["cancelled"] >= 1 and set(outcomes) <= {"ok", "cancelled"}, (outcomes, failures(records))
    cut = [r for r in records if r.outcome is Outcome.CANCELLED]
    # cut short: fewer than its COUNT of responses
    shown = Counter((r.cls, r.responses) for r in cut)
    assert any(r.responses < counts[r.cls] for r in cut), shown
    assert all(r.responses <= counts[r.cls] for r in cut), shown


def test_one_closed_loop_drives_a_decoupled_and_a_plain_model_together(fanout, data):
    classes = (count_class(data, "streamed", 4, model="fanout"), TrafficClass("plain", model="two_inputs"))
    spec = LoadSpec(model="fanout", concurrency=4, duration_s=None, max_requests=60, classes=classes, seed=4)
    records, summary = run(fanout, spec)
    assert len(records) == 60 and not failures(records), failures(records)
    plain = [r for r in records if r.cls == "plain"]
    assert len(plain) > 20 and all(r.responses == 0 and r.first_s is None for r in plain)
    assert summary["plain"]["responses"] == 0 and summary["plain"]["first_p50_ms"] is None
    check_counts([r for r in records if r.cls == "streamed"], {"all": summary["streamed"]}, {"streamed": 4})


def test_a_sequence_group_on_a_decoupled_model_is_refused_before_the_run(fanout):
    spec = LoadSpec(model="fanout", duration_s=1.0, classes=(), sequences=(SequenceSpec("seq", model="fanout"),))
    with pytest.raises(ValueError, match="sequence group seq: fanout is decoupled"):
        asyncio.run(LoadRun(spec, fanout.http_url, grpc_url=fanout.grpc_url).run())


def test_many_requests_written_at_once_share_one_stream(fanout):
    async def burst():
        loop = asyncio.get_running_loop()
        slot = StreamSlot(fanout.grpc_url, loop.time)
        request = encode_request("fanout", [("COUNT", "INT32", np.array([2], np.int32))])
        pending = [Pending(loop.create_future()) for _ in range(100)]
        try:  # gRPC's core fails a call given two sends at once: the slot must write one at a time
            await asyncio.gather(*(slot.write(str(i), with_id(request, str(i)), p) for i, p in enumerate(pending)))
            await asyncio.wait_for(asyncio.gather(*(p.done for p in pending)), 30)
        finally:
            await slot.close()
        return Counter((p.kind, p.responses, p.error) for p in pending)

    assert asyncio.run(burst()) == {("", 2, ""): 100}


def test_token_sim_streams_every_token_over_the_stream_path(triton, tmp_path):
    length, generations = 5, 16
    data = tmp_path / "length.json"
    data.write_text(json.dumps({"data": [{"LENGTH": [length]}]}))
    for mode in (Mode.CLOSED, Mode.OPEN):
        spec = LoadSpec(mode=mode, rate=30.0, concurrency=4, model="token_sim", duration_s=None,
                        max_requests=generations, classes=(TrafficClass("gen", data=str(data)),), seed=5)
        records, summary = run(triton.endpoint, spec)
        outcomes = Counter((r.outcome.value, r.responses, r.detail) for r in records)
        assert len(records) == generations and set(outcomes) == {("ok", length, "")}, (mode, outcomes)
        row = summary["all"]
        assert row["responses"] == length * row["ok"] and row["gap_n"] == row["ok"], row
        assert all(r.first_s <= r.latency_s for r in records)
