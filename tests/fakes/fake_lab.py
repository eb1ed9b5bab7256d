"""A Lab with no server: app.lab.root.Lab itself, its parts real, only what crosses a process or the network faked.

What is fake: the server (tests/fakes/sim_triton.SimTriton answers /metrics and the statistics API;
tests/fakes/fake_config.py loads configs into it, a model without config.pbtxt serving what
tests/fakes/auto_complete.py completes; a smoke check passes unless a test says otherwise; the GPUs it reports are
what a test sets) and the load generator's worker process (tests/fakes/sim_worker.py: the simulated server's records
of each second). What is real: every verb of the Lab, the config service's safe apply (validation, contract, stale
base, history, the file written in a copy of the repository), the metrics poller's parsing and windows, the load
controller's statistics, a meter's windows, the marker log, the experiment store and the job runner. Time is the wall
clock; each read first simulates the whole seconds up to now (catch_up), so a page drawn a second later sees a second
more.
"""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from app.config.model_config import ModelConfig, parse_config
from app.config.settings import Kind  # noqa: F401 - re-exported for tests that build configs
from app.lab.ports import ServerFacts
from app.lab.root import Lab
from app.metrics.gpu import GpuView
from app.timeline.meter import Meter
from app.metrics.poller import MetricsPoller
from app.server.control_mode import ControlMode
from app.server.repository import model_names
from app.server.status import ModelState, ServerStatus
from app.store.database import ExperimentStore
from app.timeline.markers import ALL_MODELS, MarkerLog
from loadgen.controller import LoadController
from tests.fakes.auto_complete import auto_completed, with_defaults
from tests.fakes.fake_config import FakeConfigService
from tests.fakes.sim_triton import ENDPOINT, SimTriton
from tests.fakes.sim_worker import SimWorker

HISTORY_S = 24  # the seconds of (idle) history a new fake lab has already polled


class FakeLab(Lab):
    """app.lab.root.Lab on a simulated server: every port, no process, no network.

    repo: the repository the server serves (a copy is made in state_dir; default the lab's own); models: only these
    of it; control: how configs reach the server (explicit, poll, none: ControlMode); backend: remote (a server
    someone else runs) or embedded/docker (one the lab started: it restarts, and has a log, self.log);
    fleet: a fleet's Prometheus (app.metrics.promql.PromQLSource); writes_repository: False for a lab that writes no
    config.pbtxt (TRITON_MODEL_REPOSITORY unset). A test then sets what the server does: refuse_loads, fail_smoke,
    refuse_requests, set_down, set_metrics_down, set_state, set_gpus.
    """

    def __init__(self, state_dir: Path, repo: Path | None = None, models: tuple[str, ...] | None = None,
                 control: ControlMode | None = None, backend: str = "remote", fleet=None,
                 writes_repository: bool = True) -> None:
        from app.paths import MODEL_REPOSITORY  # noqa: PLC0415

        source = Path(repo) if repo is not None else MODEL_REPOSITORY
        self.repo_copy = Path(state_dir) / "model_repository"
        if not self.repo_copy.exists():
            shutil.copytree(source, self.repo_copy, ignore=shutil.ignore_patterns("__pycache__", "*.onnx"))
        names = models or tuple(model_names(self.repo_copy))
        self.states: dict[str, tuple[str, str]] = {}
        self.gpus: GpuView | None = None  # what gpu_view returns (set_gpus): a CPU server reports none
        configs = {}
        for name in names:
            try:
                configs[name] = with_defaults(self.folder_config(name))
                self.states[name] = ("READY", "")
            except Exception as exc:  # noqa: BLE001 - a model that cannot load is listed with its reason
                self.states[name] = ("UNAVAILABLE", str(exc))
        self.sim = SimTriton(ENDPOINT.metrics_url, ENDPOINT.http_url, configs)
        self.worker = SimWorker(self.sim)
        self._polled = time.time() - HISTORY_S
        self._catch_lock = threading.RLock()
        markers = MarkerLog()
        metrics = MetricsPoller(ENDPOINT, fetch=self.sim.fetch, clock=lambda: self._polled)
        load = LoadController(ENDPOINT.http_url, held=markers.held, grpc_url=ENDPOINT.grpc_url, worker=self.worker)
        self.store_path = Path(state_dir) / "experiments.sqlite"  # a test may damage a stored row there (sqlite3)
        control = control or ControlMode("explicit", "a fake lab's server")
        writes = self.repo_copy if writes_repository else None  # None: the server's folder is not the lab's to write
        config = FakeConfigService(self, writes, Path(state_dir) / "history", control)
        super().__init__(ENDPOINT, writes, config=config, metrics=metrics, load=load, markers=markers,
                         store=ExperimentStore(self.store_path), control_mode=control,
                         fleet=fleet)
        self.restarts = 0
        self.backend = backend  # remote: a server someone else runs; embedded or docker: one the lab "started"
        self.log = ""  # the log of a server the lab started (what server_log shows)

    # --- what a test sets ---------------------------------------------------------------------------------------

    def folder_config(self, model: str) -> ModelConfig:
        """Return the config a model's folder gives: its config.pbtxt (named), else what Triton auto-completes."""
        path = self.repo_copy / model / "config.pbtxt"
        if not path.is_file():
            return auto_completed(self.repo_copy / model)
        config = parse_config(path.read_text(), source=f"{model}/config.pbtxt")
        config.name = config.name or model
        return config

    def refuse_loads(self, model: str, reason: str) -> None:
        """Make the server refuse every later load of model with reason."""
        self._config.control.refuse[model] = reason

    def fail_smoke(self, model: str, words: str) -> None:
        """Make every later smoke check of model fail with words."""
        self._config.smoke_failure[model] = words

    def set_down(self, down: bool = True) -> None:
        """Make the server stop (or start again) answering; the poller sees it at once (the real one within 1 s)."""
        self.sim.up = not down
        self._poll_now()

    def set_metrics_down(self, down: bool = True) -> None:
        """Make /metrics stop (or start again) answering, the statistics API still answering; polled at once."""
        self.sim.metrics_up = not down
        self._poll_now()

    def refuse_requests(self, model: str, words: str | None) -> None:
        """Make the server refuse every later request to model with words (HTTP 400; None: serve again)."""
        if words is None:
            self.sim.refusing.pop(model, None)
        else:
            self.sim.refusing[model] = words

    def set_gpus(self, view: GpuView | None) -> None:
        """Make the server report GPUs (None: a CPU server, the default)."""
        self.gpus = view

    def set_state(self, model: str, state: str, reason: str = "") -> None:
        """Make a model show a state (UNAVAILABLE with Triton's reason, say)."""
        self.states[model] = (state, reason)

    def catch_up(self) -> None:
        """Simulate every whole second up to now: the runs' records, then one poll each."""
        with self._catch_lock:
            now = time.time()
            while self._polled + 1.0 <= now:
                self._polled += 1.0
                for run in list(self.worker.runs):
                    run.catch_up(self._polled)
                self._metrics.poll_once()

    def _poll_now(self) -> None:
        """Poll once more now, between the whole seconds (a change of the server shows without waiting for one)."""
        with self._catch_lock:
            self.catch_up()
            self._polled += 0.001
            self._metrics.poll_once()

    # --- the verbs that ask the server itself ---------------------------------------------------------------------

    def status(self) -> ServerStatus:
        if not self.sim.up:
            return ServerStatus(up=False, error="connection refused (the fake lab's server is down)")
        models = tuple(ModelState(name, "1", state, reason) for name, (state, reason) in sorted(self.states.items()))
        return ServerStatus(up=True, ready=True, version="2.51.0", models=models)

    def server_facts(self) -> ServerFacts:
        described = ("remote (TRITON_URL)" if self.backend == "remote" else
                     f"{self.backend} tritonserver (the fake lab's), process 4242")
        return ServerFacts(self.backend, described, ENDPOINT, self._control_mode, self._repo)

    def server_log(self, lines: int = 60) -> str:
        return "\n".join(self.log.splitlines()[-lines:]) if self.backend != "remote" else ""

    def restart(self, resume_traffic: bool = False) -> None:
        if self.backend == "remote":
            raise RuntimeError("the server is remote (TRITON_URL); restart it where it runs")
        spec = self._load.spec if self._load.running else None
        self.stop_traffic("traffic stopped for a server restart")
        band = self._markers.begin(ALL_MODELS, "restart", "server restart")
        self.restarts += 1
        self._markers.finish(band)
        if resume_traffic and spec is not None:
            self.start_traffic(spec)

    def gpu_view(self, model: str) -> GpuView | None:
        return self.gpus if self.sim.up else None

    def lab_models(self) -> FakeLab:
        return self

    # --- reads catch up first -------------------------------------------------------------------------------------

    def server_view(self, model=None, window_s=120.0, now=None):
        self.catch_up()
        return super().server_view(model, window_s, now)

    def measure(self, model, t0, t1, include_held=True):
        self.catch_up()
        return super().measure(model, t0, t1, include_held)

    def meter(self, model, slas_s=None) -> Meter:
        return Meter(self._load, ENDPOINT, model, slas_s, fetch=self._fetch_now)

    def recorded_windows(self, model, t0, t1):
        self.catch_up()
        return super().recorded_windows(model, t0, t1)

    def _fetch_now(self, url: str, timeout_s: float = 2.0) -> str:
        """What the server answers at url now (a meter's edge): every second up to now simulated first."""
        self.catch_up()
        return self.sim.fetch(url, timeout_s)

    def traffic_snapshot(self, window_s=120.0):
        self.catch_up()
        return super().traffic_snapshot(window_s)

    def traffic_window(self, t0, t1):
        self.catch_up()
        return super().traffic_window(t0, t1)

    def start_traffic(self, spec, ran_s: float = 0.0) -> None:
        """Start the load; ran_s: pretend it began that long ago, its history there at once (up to the seconds not
        simulated yet: a new fake lab has HISTORY_S of them, until its first read)."""
        ran_s = min(ran_s, max(0.0, time.time() - self._polled - 1.0))
        self.worker.ran_s = ran_s
        clock = self._markers.clock
        self._markers.clock = lambda: clock() - ran_s  # its marker where it pretends to have begun
        try:
            super().start_traffic(spec)
        finally:
            self._markers.clock = clock
        self.worker.ran_s = 0.0
        self.catch_up()

    def close(self) -> None:
        self._load.stop()
        if self._jobs.running:
            self._jobs.cancel(wait_s=10.0)


def fake_lab(tmp_path: Path, **kwargs) -> FakeLab:
    """Return a FakeLab keeping its state in tmp_path."""
    return FakeLab(tmp_path, **kwargs)


__all__ = ["ENDPOINT", "FakeLab", "fake_lab", "SimpleNamespace"]
