"""Schedules: streams merged in time order, live rate changes, traces."""
from __future__ import annotations

from random import Random

import pytest

from loadgen.schedule import Schedule, Stream
from loadgen.spec import ArrivalSpec


def drain(schedule: Schedule, until_s: float) -> list[tuple[float, object]]:
    out = []
    while schedule.peek() is not None and schedule.peek() < until_s:
        out.append(schedule.pop())
    return out


def constant(key, rate):
    return Stream(key, ArrivalSpec("constant"), rate, Random(0))


def test_streams_merge_in_time_order():
    events = drain(Schedule([constant("a", 10), constant("b", 4)]), 1.0 + 1e-9)
    times = [t for t, _ in events]
    assert times == sorted(times)
    assert [k for _, k in events].count("a") == 10 and [k for _, k in events].count("b") == 4


def test_set_rate_changes_spacing_from_now():
    schedule = Schedule([constant("a", 10)])
    drain(schedule, 0.5)
    schedule.set_rate("a", 100, now_s=0.5)
    later = drain(schedule, 1.0 + 1e-9)
    assert len(later) == 50
    assert later[0][0] == pytest.approx(0.51)


def test_rate_zero_pauses_a_stream_until_restarted():
    schedule = Schedule([constant("a", 10)])
    schedule.set_rate("a", 0, now_s=0.0)
    assert schedule.peek() is None and schedule.paused()
    schedule.set_rate("a", 2, now_s=3.0)
    assert schedule.peek() == pytest.approx(3.5)


def test_trace_stream_plays_the_file_and_rescales_on_rate_change(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("100000\n300000\n")  # 0.1 s and 0.3 s: mean rate 5/s
    stream = Stream("t", ArrivalSpec("trace", trace=str(path), loop=False), 1.0, Random(0))
    schedule = Schedule([stream])
    assert [t for t, _ in drain(schedule, 10)] == pytest.approx([0.1, 0.4])
    assert schedule.peek() is None and not schedule.paused()
    schedule.set_rate("t", 10.0, now_s=0.0)  # twice as fast
    assert [t for t, _ in drain(schedule, 10)] == pytest.approx([0.05, 0.2])


def test_ramp_stream_keeps_its_place_in_time_after_a_rate_change():
    ramp = Stream("r", ArrivalSpec("ramp", process="constant", ramp_s=10, start_fraction=0.0), 100.0, Random(0))
    schedule = Schedule([ramp])
    schedule.set_rate("r", 200.0, now_s=5.0)  # at 5 s the ramp of 200/s stands at 100/s
    first = schedule.pop()[0]
    assert first - 5.0 == pytest.approx(0.01, rel=0.01)


def test_a_stream_may_start_paused():
    schedule = Schedule([constant("a", 0)])
    assert schedule.peek() is None and schedule.paused()
