"""The open loop on virtual time (tests/unit/loadgen/fakes.py): sends on schedule, marks a missed slot late instead
of skipping it, never closes when the server stalls, follows its bounds and live rate changes. The closed loop's
worker threads need a socket server: tests/contract/loadgen/test_drivers.py."""
from __future__ import annotations

import asyncio
from random import Random

import pytest

from loadgen.bound import Bound
from loadgen.classes import PreparedClass, Target
from loadgen.client import RequestPath
from loadgen.drivers import OpenLoop
from loadgen.pacer import LoopPacer
from loadgen.records import RecordBus
from loadgen.schedule import Schedule, Stream
from loadgen.spec import ArrivalSpec
from tests.unit.loadgen.fakes import FakePool, run_virtual

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
    assert len(records) == 99 and all(r.late for r in records)
    assert all(r.lateness_s == pytest.approx(0.0025, abs=1e-9) for r in records)


def test_arrivals_due_before_the_deadline_are_sent_when_the_loop_reaches_them_after_it():
    # A loop 250 ms behind (a starved host) sends what is due each time it wakes; the arrivals due at 0.79-0.99 s
    # come up only when the 1 s deadline wakes it. They are part of the schedule, so they go (late), and the run
    # ends there (nothing due at or after 1 s goes).
    async def main():
        records, pool, bound, path = setup()
        await open_loop(path, bound, rate=100.0, pacer=LatePacer(0.25)).run()
        return records, bound

    records, bound = run_virtual(main)
    after = sorted(r.scheduled_s for r in records if r.sent_s >= 1.0)
    assert len(records) == 99 and max(r.scheduled_s for r in records) == pytest.approx(0.99)
    assert len(after) >= 10 and all(r.late for r in records if r.sent_s >= 1.0)
    assert bound.expired and not bound.stopped


def test_a_stop_ends_a_late_loop_at_once():
    async def main():
        loop = asyncio.get_running_loop()
        records, pool, bound, path = setup(duration_s=60.0)
        loop.call_at(loop.time() + 0.5055, bound.close)
        await open_loop(path, bound, rate=100.0, pacer=LatePacer(0.25)).run()
        return records

    records = run_virtual(main)  # at 0.26 it sends what is due by then (0.01-0.26); the stop comes before 0.51
    assert len(records) == 26 and max(r.sent_s for r in records) < 0.5055


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
        records, pool, bound, path = setup(duration_s=8.0)
        await open_loop(path, bound, rate=500.0, kind="poisson").run()
        return records

    records = run_virtual(main)
    assert len(records) / 8.0 == pytest.approx(500.0, rel=0.05)  # 4,000 arrivals: 1.6 % s.e.
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
