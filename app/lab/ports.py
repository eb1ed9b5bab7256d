"""The lab as pages, studies and command lines see it: small typed ports over the Lab's verbs.

Nothing outside app.lab holds the Lab's parts (the config service, the poller, the load generator, the marker log,
the store): a page or a study takes the smallest port that names what it does, and calls its verbs.
app.lab.root.Lab offers every port; tests/fakes/fake_lab.FakeLab offers them without a server
(tests/unit/lab/test_ports.py holds both to every verb here, signature for signature).

Serving   the server: its status, what it is, its log, a restart, the GPUs it reports
Plans     plan & apply: what a model serves, a change planned, applied, undone, and its history
Timeline  the changes on the charts: markers, the last change, a reload under way
Traffic   the one shared load: what runs, start, change, stop
Measure   figures of a window, before/after a change, the poller's view, a meter with exact edges, the fleet
Store     the experiment store: runs and studies, kept, relabelled, deleted
Studies   the store and the lab's one background job (start, cancel, wait)
WhatIf    the twin (app/twin): its calibration of a model, and what it predicts a config does under a load
StudyLab  what a study running as the job needs: every port but the job's own verbs
LabPort   every port: what a page takes
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the types the verbs take and give; nothing here imports them at run time
    from app.config.apply import ApplyPlan, ApplyResult
    from app.config.caps import ServerCaps
    from app.config.history import HistoryProblem, Version
    from app.config.model_config import ModelConfig
    from app.lab.jobs import Job, JobState
    from app.metrics.gpu import GpuView
    from app.timeline.meter import Edge, MeasuredWindow, Meter
    from app.metrics.poller import MetricsSnapshot
    from app.metrics.promql import FleetFigures
    from app.server.control_mode import ControlMode
    from app.server.endpoint import Endpoint
    from app.server.status import ServerStatus
    from app.store.database import Experiment, Study
    from app.timeline.figures import Figures
    from app.timeline.markers import Marker
    from app.config.settings import ModelSettings
    from app.twin.calibration import Calibration
    from app.twin.load import Load
    from app.twin.checks import PredictionCheck
    from app.twin.predict import Prediction
    from loadgen.controller import LoadSnapshot
    from loadgen.records import Record
    from loadgen.spec import LoadSpec

CHANGE_KINDS = ("apply", "undo", "restart")


@dataclass(frozen=True)
class ServerFacts:
    """What the server is and where it answers: shown on Overview, named in reports."""

    backend: str  # embedded | docker | remote
    description: str  # e.g. "embedded tritonserver 2.51 (pid 123)"; "remote (TRITON_URL)"
    endpoint: Endpoint
    control: ControlMode  # how configs reach it (explicit, poll, none) and what blocks an Apply
    repository: Path | None  # the folder the lab writes config.pbtxt to (None: it writes none)
    locust_url: str | None = None  # a Locust master that drives load too (TBL_LOCUST_URL)

    @property
    def embedded(self) -> bool:
        """Return True when the lab started the server itself (embedded, or a container it owns)."""
        return self.backend != "remote"


@dataclass(frozen=True)
class ApplyRoute:
    """How an Apply reaches the server: Triton's control mode, and for explicit, over gRPC or HTTP and why."""

    mode: str  # explicit | poll | none | unknown
    transport: str = ""  # grpc | http ('' until the first Apply asked)
    why: str = ""


@dataclass(frozen=True)
class TrafficState:
    """The shared load generator as it is now."""

    running: bool
    spec: LoadSpec | None  # what runs (or ran last)
    started_at: float | None  # when the running load began sending (epoch s); None before it has
    last_started_at: float | None  # when the last run began sending, running or not
    runs: int  # how many runs started since the lab began: a new run redraws every form from its spec
    worker_pid: int | None = None  # the generator's own process (shown to the operator)


@runtime_checkable
class Serving(Protocol):
    """The server itself."""

    def status(self) -> ServerStatus:
        """Return what the server says about itself (up=False when it is down); never raises."""

    def ready_models(self) -> list[str]:
        """Return the names of the models that are READY, sorted."""

    def serves(self, models: Iterable[str]) -> bool:
        """Return True when every one of models is READY."""

    def server_facts(self) -> ServerFacts:
        """Return what the server is, where it answers and how configs reach it."""

    def server_log(self, lines: int = 60) -> str:
        """Return the last lines of the server's log ('' for a server the lab did not start)."""

    def restart(self, resume_traffic: bool = False) -> None:
        """Restart a server the lab started, on the same ports (RuntimeError for a remote one)."""

    def gpu_view(self, model: str) -> GpuView | None:
        """Return the GPUs the server reports and what one instance of model takes (None: no GPU figures)."""

    def lab_models(self) -> LabPort:
        """Return a lab that serves the lab's own models: this one, or a second server beside a user's."""


@runtime_checkable
class Plans(Protocol):
    """What a model serves, and changes to it: planned, applied, undone, remembered."""

    def served_config(self, model: str) -> ModelConfig:
        """Return the config the model serves (ConfigError when it cannot be read)."""

    def served_text(self, model: str) -> str:
        """Return the model's config.pbtxt, or the served config formatted when it has none."""

    def file_text(self, model: str) -> str | None:
        """Return the model's config.pbtxt as written, None when it has none (or the lab writes no repository)."""

    def plan(self, model: str, proposed: ModelConfig) -> ApplyPlan:
        """Return what applying proposed would load, write and change (ConfigError when it cannot)."""

    def preview_text(self, model: str, text: str) -> tuple[ModelConfig, str, list]:
        """Return (config, diff, contract changes) of a whole config.pbtxt text (ConfigError when it cannot)."""

    def server_caps(self) -> ServerCaps:
        """Return what the server can serve (backends, GPUs): validation's limits."""

    def apply(self, model: str, config: ModelConfig, what: str, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Serve config through safe apply (validated, reloaded, verified, rolled back on failure), marked."""

    def apply_text(self, model: str, text: str, what: str, base: str | None = None,
                   confirm_contract: bool = False) -> ApplyResult:
        """Serve a whole config.pbtxt text through safe apply, written as given, marked."""

    def undo(self, model: str) -> ApplyResult:
        """Serve the model's previous config version again, marked."""

    def rollback(self, model: str, version_id: str, what: str = "rollback") -> ApplyResult:
        """Serve a recorded config version again, marked."""

    def apply_blocked(self) -> str | None:
        """Return why no Apply can take effect on this server (with the fix), None when one can."""

    def undo_blocked(self, model: str) -> str | None:
        """Return why Undo cannot run for the model, None when it can."""

    def apply_route(self) -> ApplyRoute:
        """Return how an Apply reaches the server."""

    def versions(self, model: str) -> list[Version]:
        """Return every config version the model served, oldest first."""

    def version_text(self, model: str, version_id: str) -> str:
        """Return the config text of one recorded version."""

    def history_problems(self, model: str) -> list[HistoryProblem]:
        """Return the versions of the model's history that cannot be read (skipped), in words."""


@runtime_checkable
class Timeline(Protocol):
    """The changes drawn on every chart."""

    def markers(self, model: str | None = None, since: float = 0.0) -> list[Marker]:
        """Return the markers of a model (and the whole server's) that end at or after since, oldest first."""

    def last_change(self, model: str, kinds: tuple[str, ...] = CHANGE_KINDS) -> Marker | None:
        """Return the newest change of those kinds to the model (or a restart)."""

    def reloading(self, model: str) -> bool:
        """Return True while a reload of the model (or a restart) is under way."""

    def mark(self, model: str, kind: str, text: str) -> Marker:
        """Record an instant marker now."""

    def timeline_version(self) -> int:
        """Return a number that grows with every marker added or finished: views built before it are stale."""


@runtime_checkable
class Traffic(Protocol):
    """The one load generator every page and session shares."""

    def traffic(self) -> TrafficState:
        """Return what the load generator runs now."""

    def traffic_snapshot(self, window_s: float = 120.0) -> LoadSnapshot:
        """Return the running (or last) run's per-second timeline of the last window_s, and its summary."""

    def traffic_window(self, t0: float, t1: float) -> dict[str, dict]:
        """Return per-class client figures over the whole seconds of [t0, t1), of every run (all its models)."""

    def traffic_records(self, fn: Callable[[list[Record]], None]) -> Callable[[], None]:
        """Hand every batch of the load generator's records to fn (its own thread); return the unsubscribe."""

    def start_traffic(self, spec: LoadSpec) -> None:
        """Start the load (ValueError for a spec the limits refuse), marked on every target model's charts."""

    def update_traffic(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the running load's rate or concurrency, marked."""

    def reset_traffic_stats(self) -> None:
        """Start the client statistics again from now, marked."""

    def stop_traffic(self, why: str = "traffic stop") -> None:
        """Stop the load (when running), marked."""


@runtime_checkable
class Measure(Protocol):
    """Figures of windows: computed once, from counter differences and merged latencies."""

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
        """Return the figures of [t0, t1) of a model."""

    def impact(self, marker: Marker, model: str, span_s: float = 10.0) -> dict:
        """Return {'before', 'after'} figures around a change, the requests its reload held left out."""

    def server_view(self, model: str | None = None, window_s: float = 120.0,
                    now: float | None = None) -> MetricsSnapshot:
        """Return the poller's per-interval rows, batch sizes and state over the last window_s."""

    def meter(self, model: str, slas_s: dict[str, float] | None = None) -> Meter:
        """Return a meter of the model's windows with exact edges (close it when done: a context manager)."""

    def recorded_windows(self, model: str, t0: float, t1: float) -> list[MeasuredWindow]:
        """Return [t0, t1) as one-second windows from t0 on, from what the poller and the load generator kept."""

    def fleet_window(self, model: str, window_s: float) -> FleetFigures | None:
        """Return every replica's figures of the last window_s from the fleet's Prometheus (None: no fleet)."""

    def fleet_url(self) -> str | None:
        """Return the fleet's Prometheus (TBL_PROMETHEUS_URL), None when the lab reads none."""


@runtime_checkable
class Store(Protocol):
    """Saved runs and studies."""

    def runs(self, model: str | None = None, kind: str | None = "run", study_id: int | None = None) -> list[Experiment]:
        """Return stored runs, newest first (a row that cannot be read: a record with its error)."""

    def run(self, run_id: int) -> Experiment:
        """Return one stored run (KeyError when there is none)."""

    def add_run(self, run: Experiment) -> int:
        """Store a run; return its id."""

    def relabel_run(self, run_id: int, label: str) -> None:
        """Rename a stored run."""

    def delete_run(self, run_id: int) -> None:
        """Delete a stored run."""

    def studies(self, kind: str | None = None, model: str | None = None) -> list[Study]:
        """Return stored studies, newest first."""

    def study(self, study_id: int) -> Study:
        """Return one stored study (KeyError when there is none)."""

    def add_study(self, study: Study) -> int:
        """Store a study; return its id."""

    def update_study(self, study_id: int, *, status: str | None = None, result: dict | None = None,
                     note: str | None = None, label: str | None = None, owner: str | None = None) -> None:
        """Change a stored study's status (ending it unless running), result, note, label or owner."""

    def delete_study(self, study_id: int) -> None:
        """Delete a study and its runs."""


@runtime_checkable
class Studies(Store, Protocol):
    """The store, and the lab's one background job (a sweep, an A/B, a scenario, the autopilot)."""

    def job(self) -> JobState | None:
        """Return the current (or last) job's state, None when none has run."""

    def job_running(self) -> bool:
        """Return True while a job runs."""

    def start_job(self, job: Job) -> None:
        """Run a job in the background (RuntimeError when one runs already)."""

    def cancel_job(self, wait_s: float = 0.0) -> None:
        """Ask the running job to stop after its current window; optionally wait for it."""

    def wait_job(self, timeout_s: float | None = None) -> bool:
        """Wait until the job ends; return True when it has."""


@runtime_checkable
class WhatIf(Protocol):
    """The twin, calibrated from what the server reports: answers before measurement."""

    def calibration(self, model: str, window_s: float = 30.0) -> Calibration | None:
        """Return the twin's calibration of a model (None before any execution of it was seen)."""

    def learn(self, model: str, t0: float, t1: float) -> bool:
        """Note the model's executions of [t0, t1) with the twin; return whether there were enough."""

    def learn_edges(self, model: str, before: Edge, after: Edge, figures: Figures,
                    p99_parts_ms: tuple[float, ...] = ()) -> bool:
        """Note the model's executions between two edges of a meter with the twin (p99_parts_ms: the clients' p99 of
        every window its level was cut into, this one's among them); return whether there were enough."""

    def twin_load(self, model: str, rate: float | None = None, concurrency: int | None = None) -> Load | None:
        """Return the twin's load for the traffic the lab sends the model (None when none has run)."""

    def predict(self, model: str, settings: ModelSettings, load: Load | None = None) -> Prediction:
        """Return what settings would do under load (default: the lab's traffic); ValueError with the way out."""

    def note_prediction(self, model: str, prediction: Prediction) -> int | None:
        """Keep what the twin predicted for the change just applied to the model (None: no change to keep it with)."""

    def prediction_checks(self, model: str, limit: int = 5) -> list[PredictionCheck]:
        """Return the model's latest predictions beside what was measured after each change."""


@runtime_checkable
class StudyLab(Serving, Plans, Timeline, Traffic, Measure, Store, WhatIf, Protocol):
    """The lab as a study sees it: it serves configs, runs traffic, measures, marks, stores and predicts."""


@runtime_checkable
class LabPort(Serving, Plans, Timeline, Traffic, Measure, Studies, WhatIf, Protocol):
    """Every port: what a page, the command lines and the presenter's screen are handed."""


PORTS = (Serving, Plans, Timeline, Traffic, Measure, Store, Studies, WhatIf)
Subscriber = Callable[[list], None]
