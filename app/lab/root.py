"""One Lab per server: the composition root of the parts that run in the background for it, and their verbs.

Lab.create builds the parts (server, config service, metrics poller, load controller, marker log, store, history
keeper, job runner) and wires them; nothing outside app.lab holds them. Pages, studies and the command lines call
the Lab's verbs, each typed by the small port that names it (app.lab.ports)."""
from __future__ import annotations

import math
import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

from app.config.apply import ConfigService
from app.config.apply import ApplyPlan, ApplyResult
from app.config.caps import ServerCaps
from app.config.errors import ConfigError
from app.config.history import HistoryProblem, Version
from app.config.model_config import ModelConfig
from app.config.read import settings_of
from app.lab.jobs import Job, Jobs, JobState
from app.lab.ports import CHANGE_KINDS, ApplyRoute, ServerFacts, TrafficState
from app.metrics.gpu import GpuMemory, GpuView, gpus_of
from app.metrics.meter import MeasuredWindow, Meter
from app.metrics.poller import MetricsPoller, MetricsSnapshot
from app.metrics.scrape import fetch_text
from app.store.database import Experiment, ExperimentStore, Study
from app.timeline.figures import Figures, impact, measure
from loadgen.controller import LoadSnapshot
from app.config.fleet import FleetApply, fleet_replicas
from app.timeline.markers import ALL_MODELS, Marker, MarkerLog
from app.metrics.promql import PromQLSource
from app.paths import MODEL_REPOSITORY, state_dir
from app.config.poll import served_timeout_s, wait_until_served
from app.server.control_mode import ControlMode, detect
from app.server.docker_server import DockerOptions, DockerServer
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint, port_options, remote_endpoint
from app.server.repository import model_names
from app.server.status import ServerStatus, fetch_status, with_log_reasons
from app.timeline.keeper import TimelineKeeper, TimelineStore
from app.traffic.form import load_targets, target_rate
from loadgen.controller import LoadController
from loadgen.report import describe_load
from loadgen.spec import LoadSpec
from loadgen.stats import ALL


# A server the lab starts itself runs with --model-control-mode=explicit.
EMBEDDED_MODE = ControlMode("explicit", "the lab started this server with --model-control-mode=explicit")


class Lab:
    """Hold one server's parts (passed in, assembled by create) and do what pages, studies and CLIs ask: every
    port of app.lab.ports."""

    def __init__(self, endpoint: Endpoint, repo: Path | None, *, config: ConfigService, metrics: MetricsPoller,
                 load: LoadController, markers: MarkerLog, store: ExperimentStore,
                 server: EmbeddedServer | DockerServer | None = None, keeper: TimelineKeeper | None = None,
                 control_mode: ControlMode = None, fleet: PromQLSource | None = None,
                 fleet_apply: FleetApply | None = None, locust_url: str | None = None) -> None:
        self._endpoint, self._repo, self._server = endpoint, repo, server
        self._config, self._metrics, self._load = config, metrics, load
        self._markers, self._store = markers, store
        self._keeper = keeper  # the history on disk: restored at create, saved every 10 s
        self._jobs = Jobs()  # the one study running in the background
        self._gpu_memory = GpuMemory()  # memory per instance count of each model (the GPU panel, the autopilot)
        self._fleet = fleet  # a fleet's Prometheus (TBL_PROMETHEUS_URL): per-replica figures
        self._fleet_apply = fleet_apply  # the other replicas an Apply updates too (TBL_FLEET...)
        self._locust_url = locust_url  # a Locust master driving load too (TBL_LOCUST_URL): shown as a source
        self._lock = threading.RLock()
        self._lab_models: Lab | None = None  # the lab's own models beside a user's repository (lab_models())
        self._control_mode: ControlMode = control_mode or EMBEDDED_MODE  # how configs reach the server

    @classmethod
    def create(cls, environ: dict | None = None) -> Lab:
        """Use TRITON_URL's server when set, else start one: the embedded server, or a Triton container with
        TBL_SERVER=docker; build and wire every part. Settings are checked before anything starts; when a part
        fails after that, what had started is stopped again (a retry never leaves a second server running)."""
        env = os.environ if environ is None else environ
        endpoint = remote_endpoint(env)
        server = None
        config_name = None
        backend = env.get("TBL_SERVER", "embedded").strip() or "embedded"
        if backend not in ("embedded", "docker"):
            raise ValueError(f"TBL_SERVER must be embedded or docker, got {backend!r}")
        apply_timeout_s, replicas = _apply_timeout(env), fleet_replicas(env)
        if endpoint is not None:
            repo = Path(env["TRITON_MODEL_REPOSITORY"]) if env.get("TRITON_MODEL_REPOSITORY") else None
            config_name = env.get("TRITON_MODEL_CONFIG_NAME") or None
        else:
            repo = Path(env.get("TBL_MODEL_REPOSITORY", MODEL_REPOSITORY))
            if backend == "docker":
                options = DockerOptions.from_env(env, repo)
                server, config_name = DockerServer(options), options.config_name
            else:
                server = EmbeddedServer(ServerOptions(model_repository=repo))
            endpoint = server.start()
        started: list = [server] if server is not None else []  # stopped again, newest first, if a later part fails
        try:
            mode = EMBEDDED_MODE if server is not None else detect(endpoint, repo, env)
            if repo is None and mode.mode == "poll" and mode.repository is not None:
                repo = mode.repository  # the folder the server polls (read from its command line): Applies write there
            markers = MarkerLog()
            metrics = MetricsPoller(endpoint)
            load = LoadController(endpoint.http_url, held=markers.held, grpc_url=endpoint.grpc_url)
            started.append(load)
            load.worker.prestart()  # the generator's process imports while the dashboard starts
            store = state_dir() / "experiments.sqlite"
            scope = f"{server.kind}:{Path(repo).resolve()}" if server is not None else f"remote:{endpoint.http_url}"
            keeper = TimelineKeeper(TimelineStore(store, scope), metrics, load, markers)
            keeper.restore()  # what an earlier dashboard process of this lab saw, before the first poll
            started.append(metrics)
            metrics.start()
            started.append(keeper)
            keeper.start()
            config = ConfigService(endpoint, repo, server_log=server.log_tail if server else None,
                                   config_name=config_name, mode=mode.mode, why_not=mode.why_not or "",
                                   load_timeout_s=apply_timeout_s)
            config.poll_wait = lambda model, check, timeout_s: wait_until_served(
                config.endpoint, model, check, served_timeout_s(mode.poll_s, timeout_s))  # two polls, then the load
            fleet = (PromQLSource(env["TBL_PROMETHEUS_URL"], job=env.get("TBL_PROMETHEUS_JOB") or None)
                     if env.get("TBL_PROMETHEUS_URL") else None)
            lab = cls(endpoint, repo, server=server, markers=markers, metrics=metrics, config=config, load=load,
                      store=ExperimentStore(store), keeper=keeper, control_mode=mode, fleet=fleet,
                      fleet_apply=FleetApply(config, replicas, markers) if replicas else None,
                      locust_url=env.get("TBL_LOCUST_URL") or None)
        except BaseException:
            for part in reversed(started):
                _stop_quietly(part)
            raise
        return lab

    # --- Serving -----------------------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        """Return what the server says about itself (up=False when it is down); a model it could not read gets its
        reason from the server's log when the lab runs the server."""
        status = fetch_status(self._endpoint)
        if self._server is not None and status.up:
            status = with_log_reasons(status, self._server.log_tail(2000))
        return status

    def ready_models(self) -> list[str]:
        """Return the names of the models that are READY, sorted."""
        return sorted(m.name for m in self.status().models if m.state == "READY")

    def serves(self, models) -> bool:
        """Return True when every one of models is READY on this lab's server."""
        return set(models) <= set(self.ready_models())

    def server_facts(self) -> ServerFacts:
        """Return what the server is, where it answers and how configs reach it."""
        backend = self._server.kind if self._server is not None else "remote"
        description = self._server.describe() if self._server is not None else "remote (TRITON_URL)"
        return ServerFacts(backend, description, self._endpoint, self._control_mode, self._repo, self._locust_url)

    def server_log(self, lines: int = 60) -> str:
        """Return the last lines of the server's log ('' for a remote server)."""
        return self._server.log_tail(lines) if self._server is not None else ""

    def restart(self, resume_traffic: bool = False) -> None:
        """Restart the embedded server on the same ports; traffic stops (marked) and, if asked, starts again after.

        The metrics history stays.
        """
        if self._server is None:
            raise RuntimeError("the server is remote (TRITON_URL); restart it where it runs")
        with self._lock:
            spec = self._load.spec if self._load.running else None
            self.stop_traffic("traffic stopped for a server restart")
            band = self._markers.begin(ALL_MODELS, "restart", "server restart")
            ok = False
            try:
                self._server.options = replace(self._server.options, **port_options(self._endpoint))
                endpoint = self._server.restart()
                ok = True
            finally:
                self._markers.finish(band, ok=ok, text=None if ok else "server restart failed")
            if endpoint != self._endpoint:  # same ports asked for; follow the server if it had to move
                self._endpoint = endpoint
                self._config.retarget(endpoint)
                self._load.url, self._load.grpc_url = endpoint.http_url, endpoint.grpc_url
            self._metrics.retarget(endpoint)
            if resume_traffic and spec is not None:
                self.start_traffic(spec)

    def gpu_view(self, model: str) -> GpuView | None:
        """Return the GPUs the server reports and what one instance of model takes (None: no GPU figures)."""
        try:
            gpus = gpus_of(fetch_text(self._endpoint.metrics_url))
        except OSError:
            return None
        if not gpus:
            return None
        try:
            groups = settings_of(self._config.current(model)).instance_groups
        except ConfigError:
            groups = ()
        return self._gpu_memory.view(model, gpus, sum(g.count for g in groups) or 1,
                                     tuple(d for g in groups for d in g.gpus), settled=not self._markers.reloading(model))

    def lab_models(self) -> Lab:
        """Return a lab on the lab's own models (gpu_sim, stream_acc, token_sim, mlp): this one when its server
        serves them, else a second embedded server beside the user's, on a private copy of model_repository/
        (other ports; started on first use, stopped with this lab). Guided scenarios need those models."""
        with self._lock:
            if self.serves(model_names(MODEL_REPOSITORY)):
                return self
            if self._lab_models is None:
                copy = state_dir() / "lab-models"
                shutil.rmtree(copy, ignore_errors=True)  # pristine configs at every start
                shutil.copytree(MODEL_REPOSITORY, copy)
                self._lab_models = Lab.create({"TBL_MODEL_REPOSITORY": str(copy)})
            return self._lab_models

    # --- Plans -------------------------------------------------------------------------------------------------

    def served_config(self, model: str) -> ModelConfig:
        """Return the config the model serves (ConfigError when it cannot be read)."""
        return self._config.current(model)

    def served_text(self, model: str) -> str:
        """Return the model's config.pbtxt, or the served config formatted when it has none."""
        return self._config.current_text(model)

    def file_text(self, model: str) -> str | None:
        """Return the model's config.pbtxt as written, None when it has none."""
        return self._config.file_text(model)

    def plan(self, model: str, proposed: ModelConfig) -> ApplyPlan:
        """Return what applying proposed would load, write and change."""
        return self._config.plan(model, proposed)

    def preview_text(self, model: str, text: str) -> tuple[ModelConfig, str, list]:
        """Return (config, diff, contract changes) of a whole config.pbtxt text."""
        return self._config.text_preview(model, text)

    def server_caps(self) -> ServerCaps:
        """Return what the server can serve (backends, GPUs)."""
        return self._config.caps()

    def apply(self, model: str, config: ModelConfig, what: str, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Hot-reload a model with a new config (checked, verified, rolled back on failure); mark the band.
        With a fleet, every replica in turn (one band each), the updated ones rolled back when one fails."""
        if self._fleet_apply is not None:
            self._metrics.poll_once()
            return self._fleet_apply.apply(model, config, what, base=base, confirm_contract=confirm_contract)
        return self._reload(model, "apply", what, lambda: self._config.apply(
            model, config, base=base, confirm_contract=confirm_contract))

    def apply_text(self, model: str, text: str, what: str, base: str | None = None,
                   confirm_contract: bool = False) -> ApplyResult:
        """Hot-reload a model with a whole config.pbtxt text (the raw editor, a study going back to its start),
        written as given; marked like apply."""
        return self._reload(model, "apply", what, lambda: self._config.apply_text(
            model, text, base=base, confirm_contract=confirm_contract))

    def undo(self, model: str) -> ApplyResult:
        """Go back to the model's previous config version."""
        return self._reload(model, "undo", "undo", lambda: self._config.undo(model))

    def rollback(self, model: str, version_id: str, what: str = "rollback") -> ApplyResult:
        """Serve a recorded config version again (a study going back to a model without config.pbtxt)."""
        return self._reload(model, "apply", what, lambda: self._config.rollback(model, version_id))

    def apply_blocked(self) -> str | None:
        """Return why no Apply can take effect on this server, None when one can."""
        return self._config.apply_blocked()

    def undo_blocked(self, model: str) -> str | None:
        """Return why Undo cannot run for the model, None when it can."""
        return self._config.undo_blocked(model)

    def apply_route(self) -> ApplyRoute:
        """Return how an Apply reaches the server (over gRPC or HTTP once the first Apply has asked)."""
        transport = self._config.control.transport if self._config.mode == "explicit" else None
        return ApplyRoute(self._config.mode, transport.name if transport else "", transport.why if transport else "")

    def versions(self, model: str) -> list[Version]:
        """Return every config version the model served, oldest first."""
        return self._config.history(model)

    def version_text(self, model: str, version_id: str) -> str:
        """Return the config text of one recorded version."""
        return self._config.history_store.text(model, version_id)

    def history_problems(self, model: str) -> list[HistoryProblem]:
        """Return the unreadable versions of the model's history, in words."""
        return self._config.history_problems(model)

    # --- Timeline ----------------------------------------------------------------------------------------------

    def markers(self, model: str | None = None, since: float = 0.0) -> list[Marker]:
        """Return the markers of a model (and the whole server's) that end at or after since, oldest first."""
        return self._markers.list(model, since)

    def last_change(self, model: str, kinds: tuple[str, ...] = CHANGE_KINDS) -> Marker | None:
        """Return the newest change of those kinds to the model (or a restart)."""
        return self._markers.last_change(model, kinds)

    def reloading(self, model: str) -> bool:
        """Return True while a reload of the model (or a restart) is under way."""
        return self._markers.reloading(model)

    def mark(self, model: str, kind: str, text: str) -> Marker:
        """Record an instant marker now."""
        return self._markers.add(model, kind, text)

    def timeline_version(self) -> int:
        """Return a number that grows with every marker added or finished."""
        return self._markers.version

    # --- Traffic -----------------------------------------------------------------------------------------------

    def traffic(self) -> TrafficState:
        """Return what the load generator runs now."""
        load = self._load
        return TrafficState(load.running, load.spec, load.started_at, load.last_started_at, load.runs,
                            load.worker.pid)

    def traffic_snapshot(self, window_s: float = 120.0) -> LoadSnapshot:
        """Return the running (or last) run's per-second timeline of the last window_s, and its summary."""
        return self._load.snapshot(window_s=window_s)

    def traffic_window(self, t0: float, t1: float) -> dict[str, dict]:
        """Return per-class client figures over the whole seconds of [t0, t1), of every run (all its models)."""
        return self._load.window(t0, t1)

    def start_traffic(self, spec: LoadSpec) -> None:
        """Start the shared load generator and mark it on every target model's charts."""
        self._load.start(spec)
        self._mark_traffic(spec, f"traffic start: {describe_load(spec)}")

    def update_traffic(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the running load's rate or concurrency, marked."""
        spec = self._load.spec
        if not self._load.running or spec is None:
            return
        self._load.update(rate=rate, concurrency=concurrency)
        change = f"rate → {rate:g} req/s" if rate is not None else f"concurrency → {concurrency}"
        self._mark_traffic(spec, f"traffic update: {change}")

    def reset_traffic_stats(self) -> None:
        """Start the client statistics again from now (marked)."""
        spec = self._load.spec
        if self._load.reset_stats() and spec is not None:
            self._mark_traffic(spec, "client statistics reset")

    def stop_traffic(self, why: str = "traffic stop") -> None:
        """Stop the load generator (when running) and mark it."""
        spec = self._load.spec
        running = self._load.running
        self._load.stop()
        if running and spec is not None:
            self._mark_traffic(spec, why)

    # --- Measure -----------------------------------------------------------------------------------------------

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
        """Return the window figures of [t0, t1); client figures from the load runs that sent to the model."""
        spec = self._load.spec
        figures = measure(self._metrics, self._load, model, t0, t1, include_held)
        if ALL in figures.client and model in load_targets(spec):  # what the current run asks to send
            row = replace(figures.row(), target_rps=target_rate(spec, (t0, t1), self._load.last_started_at))
            figures = replace(figures, client={**figures.client, ALL: row})  # a new value: Figures stays frozen
        return figures

    def impact(self, marker: Marker, model: str, span_s: float = 10.0) -> dict:
        """Return a model's before/after figures around a change, requests held by its reload left out."""
        return impact(marker, lambda t0, t1: self.measure(model, t0, t1, include_held=False), span_s)

    def server_view(self, model: str | None = None, window_s: float = 120.0,
                    now: float | None = None) -> MetricsSnapshot:
        """Return the poller's per-interval rows, batch sizes and state over the last window_s."""
        return self._metrics.snapshot(model=model, window_s=window_s, now=now)

    def meter(self, model: str, slas_s: dict[str, float] | None = None) -> Meter:
        """Return a meter of the model's windows with exact edges (a context manager: it stops listening)."""
        return Meter(self._load, self._endpoint, model, slas_s)

    def recorded_windows(self, model: str, t0: float, t1: float) -> list[MeasuredWindow]:
        """Return [t0, t1) as one-second windows from t0 on (client buckets with every latency, the counter
        differences of the polls that ended in each second), from what the poller and the load generator kept."""
        out = []
        for k in range(math.floor(t1 - t0 + 1e-9)):
            a = t0 + k
            buckets = self._load.buckets(a, a + 1.0, model)[0]
            delta, batches = self._metrics.delta(model, a, a + 1.0)
            out.append(MeasuredWindow(a, a + 1.0, buckets, delta, batches))
        return out

    def fleet_window(self, model: str, window_s: float) -> dict | None:
        """Return every replica's figures of the last window_s from the fleet's Prometheus (None: no fleet)."""
        return self._fleet.window(model, int(window_s)) if self._fleet is not None else None

    def fleet_url(self) -> str | None:
        """Return the fleet's Prometheus, None when the lab reads none."""
        return self._fleet.base_url if self._fleet is not None else None

    # --- Studies -----------------------------------------------------------------------------------------------

    def runs(self, model: str | None = None, kind: str | None = "run", study_id: int | None = None) -> list[Experiment]:
        """Return stored runs, newest first."""
        return self._store.runs(model=model, kind=kind, study_id=study_id)

    def run(self, run_id: int) -> Experiment:
        """Return one stored run."""
        return self._store.run(run_id)

    def add_run(self, run: Experiment) -> int:
        """Store a run; return its id."""
        return self._store.add_run(run)

    def relabel_run(self, run_id: int, label: str) -> None:
        """Rename a stored run."""
        self._store.relabel_run(run_id, label)

    def delete_run(self, run_id: int) -> None:
        """Delete a stored run."""
        self._store.delete_run(run_id)

    def studies(self, kind: str | None = None, model: str | None = None) -> list[Study]:
        """Return stored studies, newest first."""
        return self._store.studies(kind=kind, model=model)

    def study(self, study_id: int) -> Study:
        """Return one stored study."""
        return self._store.study(study_id)

    def add_study(self, study: Study) -> int:
        """Store a study; return its id."""
        return self._store.add_study(study)

    def update_study(self, study_id: int, *, status: str | None = None, result: dict | None = None,
                     note: str | None = None, label: str | None = None, owner: str | None = None) -> None:
        """Change a stored study's status (ending it unless running), result, note, label or owner."""
        self._store.update_study(study_id, status=status, result=result, note=note, label=label, owner=owner)

    def delete_study(self, study_id: int) -> None:
        """Delete a study and its runs."""
        self._store.delete_study(study_id)

    def job(self) -> JobState | None:
        """Return the current (or last) job's state."""
        return self._jobs.state

    def job_running(self) -> bool:
        """Return True while a job runs."""
        return self._jobs.running

    def start_job(self, job: Job) -> None:
        """Run a job in the background (RuntimeError when one runs already)."""
        self._jobs.start(job)

    def cancel_job(self, wait_s: float = 0.0) -> None:
        """Ask the running job to stop after its current window; optionally wait for it."""
        self._jobs.cancel(wait_s)

    def wait_job(self, timeout_s: float | None = None) -> bool:
        """Wait until the job ends; return True when it has."""
        return self._jobs.wait(timeout_s)

    # --- the parts' end ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop a running study, traffic, polling and the embedded server."""
        if self._jobs.running:
            self._jobs.cancel(wait_s=30.0)
        if self._lab_models is not None:
            self._lab_models.close()
        self._load.close()
        self._metrics.stop()
        if self._keeper is not None:
            self._keeper.stop()
        if self._server is not None:
            self._server.stop()
        if self._fleet is not None:
            self._fleet.close()

    def _mark_traffic(self, spec: LoadSpec, text: str) -> None:
        for model in sorted(load_targets(spec)):
            self._markers.add(model, "traffic", text)

    def _reload(self, model: str, kind: str, what: str, action):
        self._metrics.poll_once()  # the statistics API restarts at a reload: keep its batch counts up to now
        band = self._markers.begin(model, kind, what)
        try:
            result = action()
        except Exception as exc:
            self._markers.finish(band, detail=str(exc), ok=False, text=f"{what} — not applied")
            raise
        self._markers.finish(band, detail=result.diff)
        if result.contract:
            self._follow_contract(model, result.contract)
        return result

    def _follow_contract(self, model: str, changes: tuple[str, ...]) -> None:
        """After a confirmed contract change, running traffic to the model is rebuilt for the new contract (its
        requests are encoded from what the model now serves) instead of failing on the old one."""
        spec = self._load.spec
        if not self._load.running or spec is None or model not in load_targets(spec):
            return
        self.stop_traffic(f"traffic stop: {model}'s contract changed ({'; '.join(changes)})")
        try:
            self.start_traffic(spec)
        except (ValueError, RuntimeError) as exc:
            self._markers.add(model, "traffic", f"traffic not restarted for the new contract: {exc}")
            return
        self._markers.add(model, "traffic", "traffic rebuilt for the new contract: requests now match what it serves")


def _stop_quietly(part) -> None:
    """Stop a part a failed create had started (server, load controller, poller, keeper); never raise over the
    failure being reported."""
    stop = getattr(part, "close", None) if isinstance(part, LoadController) else getattr(part, "stop", None)
    try:
        stop()
    except Exception:  # noqa: BLE001 - the original error is the one to report
        pass


def _apply_timeout(env) -> float:
    """Return how long an Apply waits for the server to serve a config (TBL_APPLY_TIMEOUT_S, default 45 s)."""
    text = env.get("TBL_APPLY_TIMEOUT_S", "").strip()
    try:
        value = float(text) if text else 45.0
    except ValueError:
        raise ValueError(f"TBL_APPLY_TIMEOUT_S must be a number of seconds, got {text!r}") from None
    if not 1.0 <= value <= 3600.0:
        raise ValueError(f"TBL_APPLY_TIMEOUT_S must be between 1 and 3600 s, got {value:g}")
    return value
