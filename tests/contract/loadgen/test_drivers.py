"""The closed loop's worker threads against a real socket server (tests/contract/loadgen/stub_server.py): N requests
in flight, no more, resized while running; a budget; a cancel ends what is in flight. The open loop's pacing is
tested on virtual time (tests/unit/loadgen/test_drivers.py)."""
from __future__ import annotations

import asyncio
import re
import threading
from random import Random

import pytest

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass, Target
from loadgen.client import BlockingPath
from loadgen.drivers import ClosedLoop
from loadgen.outcome import Outcome
from loadgen.records import RecordBus
from tests.contract.loadgen.stub_server import StubServer
from tests.helpers import wait_until

HTTP_CLS = PreparedClass(Target("c", "m", timeout_s=30.0),
                         (b"POST /v2/models/m/infer HTTP/1.1\r\nHost: stub\r\nContent-Length: 2\r\n\r\n{}",))


def closed_loop(server: StubServer, concurrency: int, max_requests: int | None = None):
    """Return (records, path, driver): a closed loop of worker threads against server, on the running loop."""
    loop = asyncio.get_running_loop()
    records: list = []
    bound = Bound(loop.time, None, max_requests)
    path = BlockingPath(RecordBus([records.extend]), loop.time, loop.time(), Random(0), bound.may_retry)
    driver = ClosedLoop(concurrency, ClassPicker([HTTP_CLS], [1.0], Random(0)), path, bound, Random(0),
                        server.address)
    return records, path, driver


def workers() -> list[str]:
    """Return the names of the closed loop's worker threads alive now, sorted."""
    return sorted(t.name for t in threading.enumerate() if re.fullmatch(r"loadgen-\d+", t.name))


async def until(condition, what: str, timeout_s: float = 30.0) -> None:
    """Wait on the loop (its records keep flowing) until condition() holds; fail naming what."""
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


def test_a_closed_loop_keeps_n_in_flight_resizes_and_a_cancel_ends_what_is_in_flight():
    """The server holds every request until released: what arrives is exactly what the loop keeps in flight."""
    server = StubServer(hold=True)

    async def main():
        records, path, driver = closed_loop(server, 4)
        run = asyncio.ensure_future(driver.run())
        await until(lambda: server.arrived == 4, "4 requests in flight")
        driver.resize(6)
        await until(lambda: server.arrived == 6, "6 requests in flight after resize(6)")
        driver.resize(2)
        server.release()  # the 6 are answered: workers 0 and 1 send again, the other four leave
        await until(lambda: server.arrived == 8 and workers() == ["loadgen-0", "loadgen-1"],
                    "2 workers left, each with a new request out")
        in_flight = server.arrived - server.answered
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        path.bus.flush()
        return records, in_flight

    try:
        records, in_flight = asyncio.run(main())
    finally:
        server.close()
    assert (server.arrived, server.answered, in_flight) == (8, 6, 2)
    outcomes = sorted(r.outcome.value for r in records)
    assert outcomes == ["cancelled"] * 2 + ["ok"] * 6, records
    wait_until(lambda: not workers(), 10, "worker threads to leave after the cancel")


def test_a_closed_loop_stops_at_its_budget():
    server = StubServer()

    async def main():
        records, path, driver = closed_loop(server, 3, max_requests=25)
        await driver.run()
        path.bus.flush()
        return records

    try:
        records = asyncio.run(main())
    finally:
        server.close()
    assert len(records) == 25 == server.arrived and {r.outcome for r in records} == {Outcome.OK}
    assert not workers()  # run() returns once every worker has left
