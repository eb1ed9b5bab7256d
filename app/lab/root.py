"""One Lab per server: the composition root of the parts that run in the background for it, and their verbs.

Lab.create builds the parts (server, config service, metrics poller, load controller, marker log, store, history
keeper, job runner) and wires them; nothing outside app.lab holds them. Pages, studies and the command lines call
the Lab's verbs, each typed by the small port that names it (app.lab.ports)."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from app.config.apply import ConfigService
from app.lab.measure_verbs import MeasureVerbs
from app.lab.plan_verbs import PlanVerbs
from app.lab.serving_verbs import ServingVerbs
from app.lab.study_verbs import StudyVerbs
from app.lab.timeline_verbs import TimelineVerbs
from app.lab.traffic_verbs import TrafficVerbs
from app.lab.twin_verbs import PredictionCache, TwinVerbs
from app.lab.jobs import Jobs
from app.metrics.gpu import GpuMemory
from app.metrics.poller import MetricsPoller
from app.store.database import ExperimentStore
from app.twin.book import TwinBook
from app.config.fleet import FleetApply, fleet_replicas
from app.timeline.markers import MarkerLog
from app.metrics.promql import PromQLSource
from app.paths import MODEL_REPOSITORY, state_dir
from app.config.poll import served_timeout_s, wait_until_served
from app.server.control_mode import ControlMode, detect
from app.server.docker_server import DockerOptions, DockerServer
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint, remote_endpoint
from app.timeline.keeper import TimelineKeeper, TimelineStore
from loadgen.controller import LoadController


# A server the lab starts itself runs with --model-control-mode=explicit.
EMBEDDED_MODE = ControlMode("explicit", "the lab started this server with --model-control-mode=explicit")


class Lab(ServingVerbs, PlanVerbs, TimelineVerbs, TrafficVerbs, MeasureVerbs, StudyVerbs, TwinVerbs):
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
        self._twin = TwinBook()  # what the twin has learnt of each model's executions
        self._predictions = PredictionCache()  # the twin's last answers: a page redraw asks again
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
