"""Drivers on virtual time: schedule accuracy, lateness, open loop never closes, bounds, live changes."""
from __future__ import annotations

import asyncio
from random import Random

import pytest

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass, Target
from loadgen.client import RequestPath
from loadgen.drivers import ClosedLoop, OpenLoop
from loadgen.pacer import LoopPacer
from loadgen.records import RecordBus
from loadgen.schedule import Schedule, Stream
from loadgen.spec import ArrivalSpec
from tests.loadgen.fakes import FakePool, run_virtual

CLS = PreparedClass(Target("c", "m"), (b"req",))


def setup(service_s=0.01, duration_s=1.0, max_requests=None):
    loop = asyncio.get_running_loop()
    records: list = []
    pool = FakePool(service_s)
    bound = Bound(loop.time, duration_s, max_requests)
    path = RequestPath(pool, RecordBus([records.extend], batch=1), loop.time, loop.time(), Random(0), 0.001)
    return records, pool, bound, path


def open_loop(path, bound, rate=100.0, kind="constant", pacer=None):
    schedule = Schedule([Stream("main", ArrivalSpec(kind), rate, Random(1))])
    return OpenLoop(schedule, lambda key: CLS, path, bound, Random(2), pacer or LoopPacer())


class LatePacer(LoopPacer):
    """Wakes up `delay` after each due time, like a busy or descheduled process."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def wait_until(self, when: float) -> None:
        await super().wait_until(when + self.delay)


def test_open_loop_sends_exactly_on_schedule():
    async def main():
        records, pool, bound, path = setup()
        await open_loop(path, bound, rate=100.0).run()
        return records

    records = run_virtual(main)
    assert len(records) == 99  # arrivals at 10 ms, 20 ms, ... before the 1 s bound
    assert all(r.sent_s == pytest.approx(r.scheduled_s, abs=1e-9) for r in records)
    assert [r.scheduled_s for r in records[:3]] == pytest.approx([0.01, 0.02, 0.03])
    assert not any(r.late for r in records)


def test_a_missed_slot_is_recorded_late_not_skipped():
    async def main():
        records, pool, bound, path = setup()
        await open_loop(path, bound, rate=100.0, pacer=LatePacer(0.0025)).run()
        return records

    records = run_virtual(main)
    assert len(records) >= 98 and all(r.late for r in records)
    assert all(r.lateness_s == pytest.approx(0.0025, abs=1e-9) for r in records)


def test_open_loop_keeps_sending_when_the_server_stalls():
    async def main():
        records, pool, bound, path = setup(service_s=2.0, duration_s=1.0)
        await open_loop(path, bound, rate=200.0).run()
        return records, pool

    records, pool = run_virtual(main)
    # Closed loop would have stopped at the first few; open loop has ~200 in flight at once.
    assert pool.max_in_flight >= 195
    assert all(r.sent_s == pytest.approx(r.scheduled_s, abs=1e-9) for r in records)


def test_poisson_open_loop_hits_its_rate():
    async def main():
        records, pool, bound, path = setup(duration_s=20.0)
        await open_loop(path, bound, rate=500.0, kind="poisson").run()
        return records

    records = run_virtual(main)
    assert len(records) / 20.0 == pytest.approx(500.0, rel=0.03)  # 10,000 arrivals: 1 % s.e.
    assert max(r.lateness_s for r in records) < 1e-9


def test_rate_change_while_running():
    async def main():
        loop = asyncio.get_running_loop()
        records, pool, bound, path = setup(duration_s=2.0)
        driver = open_loop(path, bound, rate=10.0)
        loop.call_at(loop.time() + 1.0, driver.set_rate, "main", 100.0)
        await driver.run()
        return records

    records = run_virtual(main)
    first = sum(r.scheduled_s < 1.0 for r in records)
    second = sum(r.scheduled_s >= 1.0 for r in records)
    assert first == 9 and second == 99


def test_max_requests_bounds_the_open_loop():
    async def main():
        records, pool, bound, path = setup(duration_s=None, max_requests=37)
        await open_loop(path, bound, rate=1000.0).run()
        return records

    assert len(run_virtual(main)) == 37


def test_stop_at_any_moment():
    async def main():
        loop = asyncio.get_running_loop()
        records, pool, bound, path = setup(duration_s=60.0)
        loop.call_at(loop.time() + 0.3055, bound.close)
        await open_loop(path, bound, rate=100.0).run()
        return records

    records = run_virtual(main)
    assert len(records) == 30 and max(r.sent_s for r in records) < 0.3055


def test_closed_loop_keeps_n_in_flight_and_resizes():
    async def main():
        loop = asyncio.get_running_loop()
        records, pool, bound, path = setup(service_s=0.01, duration_s=1.0)
        driver = ClosedLoop(4, ClassPicker([CLS], [1.0], Random(0)), path, bound, Random(0))
        loop.call_at(loop.time() + 0.505, driver.resize, 8)
        loop.call_at(loop.time() + 0.805, driver.resize, 2)
        await driver.run()
        return records, pool

    records, pool = run_virtual(main)

    def in_flight(t):
        return sum(r.sent_s <= t < r.done_s for r in records)

    assert [in_flight(t) for t in (0.2553, 0.6553, 0.9553)] == [4, 8, 2]
    assert pool.max_in_flight == 8
    assert len(records) == pytest.approx(4 * 50 + 8 * 30 + 2 * 20, abs=8)
    assert not any(r.late for r in records)


def test_closed_loop_stops_at_its_bound():
    async def main():
        records, pool, bound, path = setup(service_s=0.01, duration_s=None, max_requests=25)
        await ClosedLoop(3, ClassPicker([CLS], [1.0], Random(0)), path, bound, Random(0)).run()
        return records

    assert len(run_virtual(main)) == 25


def test_class_picker_follows_shares():
    a, b = PreparedClass(Target("a", "m"), (b"",)), PreparedClass(Target("b", "m"), (b"",))
    picker = ClassPicker([a, b], [1.0, 3.0], Random(0))
    picks = [picker.pick().target.cls for _ in range(20_000)]
    assert picks.count("b") / len(picks) == pytest.approx(0.75, abs=0.015)
