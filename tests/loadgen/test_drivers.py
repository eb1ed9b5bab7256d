"""Drivers on virtual time: schedule accuracy, lateness, open loop never closes, bounds, live changes."""
from __future__ import annotations

import asyncio
import re
import threading
import time
from random import Random

import numpy as np

import pytest

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass, Target
from loadgen.client import BlockingPath, RequestPath
from loadgen.drivers import ClosedLoop, OpenLoop
from loadgen.pacer import LoopPacer
from loadgen.records import RecordBus
from loadgen.schedule import Schedule, Stream
from loadgen.spec import ArrivalSpec
from loadgen.outcome import Outcome
from tests.helpers import wait_until
from tests.loadgen.fakes import FakePool, StubServer, run_virtual

CLS = PreparedClass(Target("c", "m"), (b"req",))
HTTP_CLS = PreparedClass(Target("c", "m", timeout_s=5.0),
                         (b"POST /v2/models/m/infer HTTP/1.1\r\nHost: stub\r\nContent-Length: 2\r\n\r\n{}",))


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
    print(len(records), after)
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


def closed_loop(server, concurrency, duration_s=None, max_requests=None):
    """A closed loop of worker threads against a real socket server, on the running loop's real clock."""
    loop = asyncio.get_running_loop()
    records: list = []
    bound = Bound(loop.time, duration_s, max_requests)
    path = BlockingPath(RecordBus([records.extend]), loop.time, loop.time(), Random(0), bound.may_retry)
    driver = ClosedLoop(concurrency, ClassPicker([HTTP_CLS], [1.0], Random(0)), path, bound, Random(0),
                        server.address)
    return records, path, driver


def in_flight_median(records, t0, t1, step=0.005):
    """Return the median number of requests in flight at instants from t0 to t1 (seconds since the start)."""
    counts = sorted(sum(r.sent_s <= t < r.done_s for r in records) for t in np.arange(t0, t1, step))
    return counts[len(counts) // 2]


def drive(server, concurrency, during=None, **bounds):
    """Run a closed loop against server until its bound (during(loop, driver) schedules changes); its records."""

    async def main():
        records, path, driver = closed_loop(server, concurrency, **bounds)
        if during is not None:
            during(asyncio.get_running_loop(), driver)
        await driver.run()
        path.bus.flush()
        return records

    try:
        return asyncio.run(main())
    finally:
        server.close()


def closed_loop_workers() -> list[str]:
    return [t.name for t in threading.enumerate() if re.fullmatch(r"loadgen-\d+", t.name)]


def test_closed_loop_keeps_n_in_flight_and_resizes():
    def changes(loop, driver):
        loop.call_later(0.5, driver.resize, 8)
        loop.call_later(1.0, driver.resize, 2)

    records = drive(StubServer(delay_s=0.01), 4, changes, duration_s=1.5)
    medians = [in_flight_median(records, a, b) for a, b in ((0.1, 0.45), (0.6, 0.95), (1.1, 1.45))]
    peak = max(sum(r.sent_s <= t < r.done_s for r in records) for t in np.arange(0.0, 1.5, 0.001))
    print(f"median in flight per phase {medians}, peak {peak}, {len(records)} requests")
    assert medians == [4, 8, 2] and peak <= 8
    assert all(r.outcome is Outcome.OK and not r.late for r in records)
    assert closed_loop_workers() == []  # run() returns once every worker has left


def test_closed_loop_stops_at_its_budget():
    server = StubServer(delay_s=0.002)
    records = drive(server, 3, max_requests=25)
    assert len(records) == 25 and len(server.spans) == 25


def test_a_cancelled_closed_loop_ends_its_requests_in_flight_as_cancelled():
    server = StubServer(hang=True)

    async def main():
        records, path, driver = closed_loop(server, 3, duration_s=30.0)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(driver.run(), 0.5)  # the run's drain timeout cancels it the same way
        path.bus.flush()
        return records

    try:
        started = time.monotonic()
        records = asyncio.run(main())
        took = time.monotonic() - started
    finally:
        server.close()
    assert [r.outcome for r in records] == [Outcome.CANCELLED] * 3, records
    wait_until(lambda: not closed_loop_workers(), 10, "worker threads to leave after the cancelled run")
    assert took < 5.0, f"cancelling took {took:.1f} s"


def test_class_picker_follows_shares():
    a, b = PreparedClass(Target("a", "m"), (b"",)), PreparedClass(Target("b", "m"), (b"",))
    picker = ClassPicker([a, b], [1.0, 3.0], Random(0))
    picks = [picker.pick().target.cls for _ in range(20_000)]
    assert picks.count("b") / len(picks) == pytest.approx(0.75, abs=0.015)
