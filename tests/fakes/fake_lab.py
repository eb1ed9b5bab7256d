"""A Lab with no server: app.lab.root.Lab itself, its parts real, only what crosses a process or the network faked.

What is fake: the server (tests/fakes/sim_triton.SimTriton answers /metrics and the statistics API; FakeControl
loads configs into it; a smoke check always passes unless a test says otherwise) and the load generator's worker
process (SimWorker: the simulated server's records of each second). What is real: every verb of the Lab, the
config service's safe apply (validation, contract, stale base, history, the file written in a copy of the
repository), the metrics poller's parsing and windows, the load controller's statistics, the marker log, the
experiment store and the job runner. Time is the wall clock; each read first simulates the whole seconds up to now
(catch_up), so a page drawn a second later sees a second more.
"""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from app.config.apply import ConfigService
from app.config.caps import ServerCaps
from app.config.errors import ServerQueryError
from app.config.model_config import ModelConfig, copy_config, from_json, parse_config
from app.config.settings import Kind  # noqa: F401 - re-exported for tests that build configs
from app.lab.ports import ServerFacts
from app.lab.root import Lab
from app.metrics.poller import MetricsPoller
from app.server.control import Transport
from app.server.control_mode import ControlMode
from app.server.endpoint import Endpoint
from app.server.repository import model_names
from app.server.status import ModelState, ServerStatus
from app.store.database import ExperimentStore
from app.timeline.markers import ALL_MODELS, MarkerLog
from loadgen.controller import LoadController
from tests.fakes.sim_triton import SimTriton

ENDPOINT = Endpoint("http://127.0.0.1:18000", "127.0.0.1:18001", "http://127.0.0.1:18002/metrics")
HISTORY_S = 60  # the seconds of (idle) history a new fake lab has already polled


class FakeControl:
    """The model control API of the simulated server: a load serves the config at once (refuse: names to fail)."""

    def __init__(self, lab: FakeLab) -> None:
        self.lab = lab
        self.transport = Transport("grpc", "the fake lab's server")
        self.refuse: dict[str, str] = {}  # model -> the reason its next loads fail with

    def load(self, model: str, config_json: str | None = None, timeout_s: float = 45.0) -> None:
        from app.server.control import ControlError  # noqa: PLC0415

        if model in self.refuse:
            raise ControlError(self.refuse[model])
        config = from_json(config_json) if config_json else self.lab.folder_config(model)
        self.lab.sim.serve(model, config)
        self.lab.states[model] = ("READY", "")


class FakeConfigService(ConfigService):
    """The lab's config service on the simulated server: the served config is the simulator's."""

    def __init__(self, lab: FakeLab, repo: Path | None, history_dir: Path) -> None:
        from app.config.history import ConfigHistory  # noqa: PLC0415

        super().__init__(ENDPOINT, repo, history=ConfigHistory(history_dir), clock=time.perf_counter,
                         caps=ServerCaps.of_repository(repo) if repo is not None else ServerCaps())
        self.lab = lab
        self.control = FakeControl(lab)
        self.smoke_failure: dict[str, str] = {}  # model -> what its next smoke checks answer (a failure)

    def live(self, model: str) -> ModelConfig:
        model_state = self.lab.states.get(model, ("", ""))[0]
        if model_state != "READY" or model not in self.lab.sim.models:
            raise ServerQueryError(f"cannot read the live config of {model!r}: it is not loaded")
        return copy_config(self.lab.sim.models[model].config)

    def _verify(self, model: str, served: ModelConfig) -> str:
        from app.config.verify import SmokeFailure  # noqa: PLC0415

        if model in self.smoke_failure:
            raise SmokeFailure(self.smoke_failure[model])
        return "READY, and a smoke request answered (fake)"

    def _ready_configs(self, but: str) -> dict[str, ModelConfig]:
        return {name: self.live(name) for name, (state, _) in self.lab.states.items() if state == "READY" and name != but}


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
        from dataclasses import replace  # noqa: PLC0415

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


class FakeLab(Lab):
    """app.lab.root.Lab on a simulated server: every port, no process, no network."""

    def __init__(self, state_dir: Path, repo: Path | None = None, models: tuple[str, ...] | None = None,
                 control: ControlMode | None = None) -> None:
        from app.paths import MODEL_REPOSITORY  # noqa: PLC0415

        source = Path(repo) if repo is not None else MODEL_REPOSITORY
        self.repo_copy = Path(state_dir) / "model_repository"
        if not self.repo_copy.exists():
            shutil.copytree(source, self.repo_copy, ignore=shutil.ignore_patterns("__pycache__", "*.onnx"))
        names = models or tuple(model_names(self.repo_copy))
        self.states: dict[str, tuple[str, str]] = {}
        configs = {}
        for name in names:
            try:
                configs[name] = self.folder_config(name)
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
        config = FakeConfigService(self, self.repo_copy, Path(state_dir) / "history")
        super().__init__(ENDPOINT, self.repo_copy, config=config, metrics=metrics, load=load, markers=markers,
                         store=ExperimentStore(Path(state_dir) / "experiments.sqlite"),
                         control_mode=control or ControlMode("explicit", "a fake lab's server"))
        self.restarts = 0

    # --- what a test sets ---------------------------------------------------------------------------------------

    def folder_config(self, model: str) -> ModelConfig:
        """Return the config a model's folder gives (its config.pbtxt, named)."""
        text = (self.repo_copy / model / "config.pbtxt").read_text()
        config = parse_config(text, source=f"{model}/config.pbtxt")
        config.name = config.name or model
        return config

    def refuse_loads(self, model: str, reason: str) -> None:
        """Make the server refuse every later load of model with reason."""
        self._config.control.refuse[model] = reason

    def fail_smoke(self, model: str, words: str) -> None:
        """Make every later smoke check of model fail with words."""
        self._config.smoke_failure[model] = words

    def set_down(self, down: bool = True) -> None:
        """Make the server stop (or start again) answering."""
        self.sim.up = not down

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

    # --- the verbs that ask the server itself ---------------------------------------------------------------------

    def status(self) -> ServerStatus:
        if not self.sim.up:
            return ServerStatus(up=False, error="connection refused (the fake lab's server is down)")
        models = tuple(ModelState(name, "1", state, reason) for name, (state, reason) in sorted(self.states.items()))
        return ServerStatus(up=True, ready=True, version="2.51.0", models=models)

    def server_facts(self) -> ServerFacts:
        return ServerFacts("remote", "a fake lab's server (no process)", ENDPOINT, self._control_mode, self._repo)

    def restart(self, resume_traffic: bool = False) -> None:
        spec = self._load.spec if self._load.running else None
        self.stop_traffic("traffic stopped for a server restart")
        band = self._markers.begin(ALL_MODELS, "restart", "server restart")
        self.restarts += 1
        self._markers.finish(band)
        if resume_traffic and spec is not None:
            self.start_traffic(spec)

    def gpu_view(self, model: str):
        return None

    def lab_models(self) -> FakeLab:
        return self

    # --- reads catch up first -------------------------------------------------------------------------------------

    def server_view(self, model=None, window_s=120.0, now=None):
        self.catch_up()
        return super().server_view(model, window_s, now)

    def measure(self, model, t0, t1, include_held=True):
        self.catch_up()
        return super().measure(model, t0, t1, include_held)

    def traffic_snapshot(self, window_s=120.0):
        self.catch_up()
        return super().traffic_snapshot(window_s)

    def traffic_window(self, t0, t1):
        self.catch_up()
        return super().traffic_window(t0, t1)

    def start_traffic(self, spec, ran_s: float = 0.0) -> None:
        """Start the load; ran_s: pretend it began that long ago, its history there at once (up to the seconds not
        simulated yet: a new fake lab has HISTORY_S of them)."""
        ran_s = min(ran_s, max(0.0, time.time() - self._polled - 1.0))
        self.worker.ran_s = ran_s
        super().start_traffic(spec)
        self.worker.ran_s = 0.0
        self.catch_up()

    def close(self) -> None:
        self._load.stop()
        if self._jobs.running:
            self._jobs.cancel(wait_s=10.0)


def fake_lab(tmp_path: Path, **kwargs) -> FakeLab:
    """Return a FakeLab keeping its state in tmp_path."""
    return FakeLab(tmp_path, **kwargs)


__all__ = ["FakeLab", "fake_lab", "SimpleNamespace"]
