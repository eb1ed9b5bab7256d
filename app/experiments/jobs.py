"""The lab's one background study — a sweep, an A/B comparison, a scenario: anything with a kind, a label and a run —
its progress shared by every session. Jobs know no kind: each study's module says how it runs (app.scenarios.runner
starts scenarios), so nothing here imports a layer above it."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from app.experiments.ab.comparison import ABPlan, run_ab
from app.experiments.sweep.space import SearchSpace
from app.experiments.sweep.sweeper import SweepOptions, run_sweep
from app.experiments.trace.trace_sweep import KIND as TRACE_SWEEP, TraceSweepPlan, run_trace_sweep
from app.text_limits import check_label

log = logging.getLogger(__name__)


class Job(Protocol):
    """What Jobs runs: its kind (sweep | ab | scenario ...) and label, and run(progress, cancel) -> its result."""

    kind: str
    label: str

    def run(self, progress: Callable[[object], None], cancel: threading.Event) -> object: ...


@dataclass(frozen=True)
class FunctionJob:
    """A job from a function: body(progress, cancel) -> result."""

    kind: str
    label: str
    body: Callable[[Callable[[object], None], threading.Event], object]

    def run(self, progress: Callable[[object], None], cancel: threading.Event) -> object:
        return self.body(progress, cancel)


@dataclass
class JobState:
    """What the page shows about the current (or last) study job."""

    kind: str  # sweep | ab | scenario
    label: str
    started: float
    progress: object | None = None  # SweepProgress | ABProgress | ScenarioProgress
    result: object | None = None  # SweepResult | ABResult | ScenarioResult
    error: str | None = None
    finished: float | None = None

    @property
    def study_id(self) -> int | None:
        return getattr(self.progress, "study_id", None) or getattr(self.result, "study_id", None)


class Jobs:
    """Run at most one study at a time in a daemon thread; cancel it; report its state."""

    def __init__(self, lab) -> None:
        self.lab = lab
        self.state: JobState | None = None
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start_sweep(self, space: SearchSpace, label: str = "", options: SweepOptions | None = None) -> None:
        """Start a new sweep; RuntimeError when a study is already running, ValueError for a label too long."""
        check_label(label, "the sweep's label")
        self.start(FunctionJob("sweep", label or f"sweep of {space.model}",
                       lambda progress, cancel: run_sweep(self.lab, space, label=label, options=options,
                                                          progress=progress, cancel=cancel)))

    def resume_sweep(self, study_id: int) -> None:
        """Resume a stopped sweep: only the points it has not measured yet."""
        self.start(FunctionJob("sweep", f"sweep {study_id} (resumed)",
                       lambda progress, cancel: run_sweep(self.lab, study_id=study_id, progress=progress,
                                                          cancel=cancel)))

    def start_trace_sweep(self, plan: TraceSweepPlan, label: str = "") -> None:
        """Start a new trace-judged sweep; RuntimeError when a study is already running, ValueError for a label too
        long."""
        check_label(label, "the sweep's label")
        self.start(FunctionJob(TRACE_SWEEP, label or f"{plan.model} on {plan.load.describe()}",
                               lambda progress, cancel: run_trace_sweep(self.lab, plan, label=label, progress=progress,
                                                                        cancel=cancel)))

    def resume_trace_sweep(self, study_id: int) -> None:
        """Resume a stopped trace-judged sweep: only the configurations it has not played yet."""
        self.start(FunctionJob(TRACE_SWEEP, f"trace-judged sweep {study_id} (resumed)",
                               lambda progress, cancel: run_trace_sweep(self.lab, study_id=study_id,
                                                                        progress=progress, cancel=cancel)))

    def start_ab(self, plan: ABPlan, label: str = "") -> None:
        """Start a new comparison; ValueError for a label too long."""
        check_label(label, "the comparison's label")
        self.start(FunctionJob("ab", label or " vs ".join(a.name for a in plan.arms),
                       lambda progress, cancel: run_ab(self.lab, plan, label=label, progress=progress, cancel=cancel)))

    def resume_ab(self, study_id: int) -> None:
        """Resume a stopped comparison: only the trials it has not run yet."""
        self.start(FunctionJob("ab", f"comparison {study_id} (resumed)",
                       lambda progress, cancel: run_ab(self.lab, study_id=study_id, progress=progress, cancel=cancel)))

    def cancel(self, wait_s: float = 0.0) -> None:
        """Ask the running study to stop after its current window; optionally wait for it."""
        self._cancel.set()
        thread = self._thread
        if wait_s and thread is not None:
            thread.join(wait_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the job ends; return True when it has."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
        return not self.running

    def start(self, job: Job) -> None:
        """Run a study in the background; RuntimeError when one is already running."""
        kind = job.kind
        with self._lock:
            if self.running:
                raise RuntimeError("a sweep or comparison is already running: cancel it or wait for it")
            cancel = self._cancel = threading.Event()
            state = self.state = JobState(kind, job.label, time.time())

            def main() -> None:
                try:
                    state.result = job.run(lambda p: setattr(state, "progress", p), cancel)
                except Exception as exc:  # noqa: BLE001 - shown on the page
                    log.exception("%s failed", kind)
                    state.error = f"{type(exc).__name__}: {exc}"
                finally:
                    state.finished = time.time()

            self._thread = threading.Thread(target=main, name=f"tbl-{kind}", daemon=True)
            self._thread.start()
