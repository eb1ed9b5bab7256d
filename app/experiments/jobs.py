"""The lab's one background study: a sweep, an A/B comparison or a scenario, its progress shared by every session."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from app.experiments.ab import ABPlan, run_ab
from app.experiments.space import SearchSpace
from app.experiments.sweep import SweepOptions, run_sweep
from app.text_limits import check_label

log = logging.getLogger(__name__)


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
        self._start("sweep", label or f"sweep of {space.model}",
                    lambda progress: run_sweep(self.lab, space, label=label, options=options, progress=progress,
                                               cancel=self._cancel))

    def resume_sweep(self, study_id: int) -> None:
        """Resume a stopped sweep: only the points it has not measured yet."""
        self._start("sweep", f"sweep {study_id} (resumed)",
                    lambda progress: run_sweep(self.lab, study_id=study_id, progress=progress, cancel=self._cancel))

    def start_ab(self, plan: ABPlan, label: str = "") -> None:
        """Start a new comparison; ValueError for a label too long."""
        check_label(label, "the comparison's label")
        self._start("ab", label or " vs ".join(a.name for a in plan.arms),
                    lambda progress: run_ab(self.lab, plan, label=label, progress=progress, cancel=self._cancel))

    def resume_ab(self, study_id: int) -> None:
        """Resume a stopped comparison: only the trials it has not run yet."""
        self._start("ab", f"comparison {study_id} (resumed)",
                    lambda progress: run_ab(self.lab, study_id=study_id, progress=progress, cancel=self._cancel))

    def start_scenario(self, name: str, full: bool = False, on=None) -> None:
        """Start a guided scenario by name (full: full-length phases); on: the lab to run it on (default this one,
        e.g. the lab's own models beside a user's repository: Lab.lab_models())."""
        from app.scenarios.catalog import SCENARIOS  # noqa: PLC0415 - scenarios build on experiments
        from app.scenarios.runner import run_scenario  # noqa: PLC0415

        scenario = SCENARIOS[name]
        target = on if on is not None else self.lab
        self._start("scenario", scenario.title,
                    lambda progress: run_scenario(target, scenario, full=full, progress=progress,
                                                  cancel=self._cancel))

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

    def _start(self, kind: str, label: str, body) -> None:
        with self._lock:
            if self.running:
                raise RuntimeError("a sweep or comparison is already running: cancel it or wait for it")
            self._cancel = threading.Event()
            state = self.state = JobState(kind, label, time.time())

            def main() -> None:
                try:
                    state.result = body(lambda p: setattr(state, "progress", p))
                except Exception as exc:  # noqa: BLE001 - shown on the page
                    log.exception("%s failed", kind)
                    state.error = f"{type(exc).__name__}: {exc}"
                finally:
                    state.finished = time.time()

            self._thread = threading.Thread(target=main, name=f"tbl-{kind}", daemon=True)
            self._thread.start()
