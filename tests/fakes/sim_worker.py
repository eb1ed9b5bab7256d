"""The load generator's worker process of a FakeLab, simulated: each run's records are the simulated server's of each
whole second, handed to the load controller's subscribers as the lab catches up (tests/fakes/fake_lab.py)."""
from __future__ import annotations

import time
from dataclasses import replace

from tests.fakes.sim_triton import SimTriton


class SimRun:
    """One run of the simulated generator: its records come second by second as the lab catches up."""

    def __init__(self, sim: SimTriton, spec, subscribers, on_start, started: float) -> None:
        self.sim, self.spec, self.subscribers = sim, spec, subscribers
        self.t0_epoch = started
        on_start(started)
        self.error = None
        self.end_s = 0.0
        self._done = started  # the records up to this time are out
        self._stopped: float | None = None
        self.limit = started + spec.duration_s if spec.duration_s else None

    def catch_up(self, now: float) -> None:
        end = min(x for x in (now, self._stopped, self.limit) if x is not None)
        while self._done + 1.0 <= end:
            self._done += 1.0
            records = self.sim.advance(self._done, self.spec, self.t0_epoch)
            for fn in self.subscribers:
                fn(records)
        self.end_s = self._done - self.t0_epoch

    def update(self, rate=None, concurrency=None) -> None:
        changes = {k: v for k, v in (("rate", rate), ("concurrency", concurrency)) if v is not None}
        self.spec = replace(self.spec, **changes)

    def stop(self) -> None:
        self._stopped = self._stopped or time.time()

    def join(self, timeout_s=None) -> bool:
        return True

    def elapsed_s(self) -> float:
        return min(time.time(), self._stopped or float("inf"), self.limit or float("inf")) - self.t0_epoch

    def is_alive(self) -> bool:
        return self._stopped is None and (self.limit is None or time.time() < self.limit)


class SimWorker:
    """The load generator's worker process, simulated: start_run makes a SimRun (backdated by `ran_s`)."""

    pid = None

    def __init__(self, sim: SimTriton) -> None:
        self.sim = sim
        self.ran_s = 0.0  # a run started from now on pretends it began this long ago (history to draw at once)
        self.runs: list[SimRun] = []

    def prestart(self) -> None:
        pass

    def close(self) -> None:
        pass

    def start_run(self, url, spec, subscribers, on_start=None, grpc_url=None) -> SimRun:
        run = SimRun(self.sim, spec, subscribers, on_start or (lambda t: None), time.time() - self.ran_s)
        self.runs.append(run)
        return run
