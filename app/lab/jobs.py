"""The lab's one background job — a sweep, an A/B comparison, a scenario, the autopilot: anything with a kind, a label
and a run — its progress shared by every session. Jobs know no kind: each study's module makes its job
(app.experiments.sweep.sweeper.sweep_job, ...), so nothing here imports a study."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


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

    kind: str  # sweep | ab | trace_sweep | scenario | probe | autopilot ...
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

    def __init__(self) -> None:
        self.state: JobState | None = None
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

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
                raise RuntimeError(f"{self.state.label} is already running: cancel it or wait for it")
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
