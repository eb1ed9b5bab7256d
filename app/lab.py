"""One Lab per server: the composition root of the parts that run in the background for it."""
from __future__ import annotations

import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

from app.config.apply import ConfigService
from app.config.fleet import FleetApply, fleet_replicas
from app.experiments.jobs import Jobs
from app.experiments.store.database import ExperimentStore
from app.timeline.figures import Figures, impact, measure
from app.timeline.markers import ALL_MODELS, Marker, MarkerLog
from app.metrics.poller import MetricsPoller
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
    """Hold the server's parts (passed in, assembled by create) and do what pages ask through them."""

    def __init__(self, endpoint: Endpoint, repo: Path | None, *, config: ConfigService, metrics: MetricsPoller,
                 load: LoadController, markers: MarkerLog, experiments: ExperimentStore,
                 server: EmbeddedServer | DockerServer | None = None, keeper: TimelineKeeper | None = None) -> None:
        self.endpoint, self.repo, self.server = endpoint, repo, server
        self.config, self.metrics, self.load = config, metrics, load
        self.markers, self.experiments = markers, experiments
        self.keeper = keeper  # the history on disk: restored at create, saved every 10 s
        self.jobs = Jobs(self)  # the one sweep or A/B comparison running in the background
        self.gpu_memory: dict[str, dict[int, float]] = {}  # model -> instance count -> GPU memory used (bytes)
        self.fleet: PromQLSource | None = None  # a fleet's Prometheus (TBL_PROMETHEUS_URL): per-replica figures
        self.fleet_apply: FleetApply | None = None  # the other replicas an Apply updates too (TBL_FLEET...)
        self.locust_url: str | None = None  # a Locust master driving load too (TBL_LOCUST_URL): shown as a source
        self._lock = threading.RLock()
        self._lab_models: Lab | None = None  # the lab's own models beside a user's repository (lab_models())
        self.control_mode: ControlMode = EMBEDDED_MODE  # how configs reach the server (found at create for a remote)

    @classmethod
    def create(cls, environ: dict | None = None) -> "Lab":
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
            lab = cls(endpoint, repo, server=server, markers=markers, metrics=metrics, config=config, load=load,
                      experiments=ExperimentStore(store), keeper=keeper)
            lab.control_mode = mode
            if env.get("TBL_PROMETHEUS_URL"):
                lab.fleet = PromQLSource(env["TBL_PROMETHEUS_URL"], job=env.get("TBL_PROMETHEUS_JOB") or None)
            lab.locust_url = env.get("TBL_LOCUST_URL") or None
            if replicas:
                lab.fleet_apply = FleetApply(lab.config, replicas, markers)
        except BaseException:
            for part in reversed(started):
                _stop_quietly(part)
            raise
        return lab

    @property
    def embedded(self) -> bool:
        """Return True when this lab started the server itself (embedded or in a container it owns)."""
        return self.server is not None

    @property
    def backend(self) -> str:
        """Return how the server runs: embedded, docker or remote."""
        return self.server.kind if self.server is not None else "remote"

    def status(self) -> ServerStatus:
        """Return what the server says about itself (up=False when it is down); a model it could not read gets its
        reason from the server's log when the lab runs the server."""
        status = fetch_status(self.endpoint)
        if self.server is not None and status.up:
            status = with_log_reasons(status, self.server.log_tail(2000))
        return status

    def restart(self, resume_traffic: bool = False) -> None:
        """Restart the embedded server on the same ports; traffic stops (marked) and, if asked, starts again after.

        The metrics history stays.
        """
        if self.server is None:
            raise RuntimeError("the server is remote (TRITON_URL); restart it where it runs")
        with self._lock:
            spec = self.load.spec if self.load.running else None
            self.stop_traffic("traffic stopped for a server restart")
            band = self.markers.begin(ALL_MODELS, "restart", "server restart")
            ok = False
            try:
                self.server.options = replace(self.server.options, **port_options(self.endpoint))
                endpoint = self.server.restart()
                ok = True
            finally:
                self.markers.finish(band, ok=ok, text=None if ok else "server restart failed")
            if endpoint != self.endpoint:  # same ports asked for; follow the server if it had to move
                self.endpoint = endpoint
                self.config.retarget(endpoint)
                self.load.url, self.load.grpc_url = endpoint.http_url, endpoint.grpc_url
            self.metrics.retarget(endpoint)
            if resume_traffic and spec is not None:
                self.start_traffic(spec)

    def apply(self, model: str, config, what: str, base: str | None = None, confirm_contract: bool = False):
        """Hot-reload a model with a new config (checked, verified, rolled back on failure); mark the band.
        With a fleet, every replica in turn (one band each), the updated ones rolled back when one fails."""
        if self.fleet_apply is not None:
            self.metrics.poll_once()
            return self.fleet_apply.apply(model, config, what, base=base, confirm_contract=confirm_contract)
        return self._reload(model, "apply", what, lambda: self.config.apply(
            model, config, base=base, confirm_contract=confirm_contract))

    def apply_text(self, model: str, text: str, what: str, base: str | None = None, confirm_contract: bool = False):
        """Hot-reload a model with a whole config.pbtxt text (the raw editor, a study going back to its start),
        written as given; marked like apply."""
        return self._reload(model, "apply", what, lambda: self.config.apply_text(
            model, text, base=base, confirm_contract=confirm_contract))

    def undo(self, model: str):
        """Go back to the model's previous config version."""
        return self._reload(model, "undo", "undo", lambda: self.config.undo(model))

    def rollback(self, model: str, version_id: str, what: str = "rollback"):
        """Serve a recorded config version again (a study going back to a model without config.pbtxt)."""
        return self._reload(model, "apply", what, lambda: self.config.rollback(model, version_id))

    def start_traffic(self, spec: LoadSpec) -> None:
        """Start the shared load generator and mark it on every target model's charts."""
        self.load.start(spec)
        self._mark_traffic(spec, f"traffic start: {describe_load(spec)}")

    def update_traffic(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the running load's rate or concurrency, marked."""
        spec = self.load.spec
        if not self.load.running or spec is None:
            return
        self.load.update(rate=rate, concurrency=concurrency)
        change = f"rate → {rate:g} req/s" if rate is not None else f"concurrency → {concurrency}"
        self._mark_traffic(spec, f"traffic update: {change}")

    def reset_traffic_stats(self) -> None:
        """Start the client statistics again from now (marked)."""
        spec = self.load.spec
        if self.load.reset_stats() and spec is not None:
            self._mark_traffic(spec, "client statistics reset")

    def stop_traffic(self, why: str = "traffic stop") -> None:
        """Stop the load generator (when running) and mark it."""
        spec = self.load.spec
        running = self.load.running
        self.load.stop()
        if running and spec is not None:
            self._mark_traffic(spec, why)

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
        """Return the window figures of [t0, t1); client figures from the load runs that sent to the model."""
        spec = self.load.spec
        figures = measure(self.metrics, self.load, model, t0, t1, include_held)
        if ALL in figures.client and model in load_targets(spec):  # what the current run asks to send
            row = {**figures.client[ALL], "target_rps": target_rate(spec, (t0, t1), self.load.last_started_at)}
            figures = replace(figures, client={**figures.client, ALL: row})  # a new value: Figures stays frozen
        return figures

    def impact(self, marker: Marker, model: str, span_s: float = 10.0) -> dict:
        """Return a model's before/after figures around a change, requests held by its reload left out."""
        return impact(marker, lambda t0, t1: self.measure(model, t0, t1, include_held=False), span_s)

    def serves(self, models) -> bool:
        """Return True when every one of models is READY on this lab's server."""
        ready = {m.name for m in self.status().models if m.state == "READY"}
        return set(models) <= ready

    def lab_models(self) -> "Lab":
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

    def close(self) -> None:
        """Stop a running study, traffic, polling and the embedded server."""
        if self.jobs.running:
            self.jobs.cancel(wait_s=30.0)
        if self._lab_models is not None:
            self._lab_models.close()
        self.load.close()
        self.metrics.stop()
        if self.keeper is not None:
            self.keeper.stop()
        if self.server is not None:
            self.server.stop()
        if self.fleet is not None:
            self.fleet.close()

    def _mark_traffic(self, spec: LoadSpec, text: str) -> None:
        for model in sorted(load_targets(spec)):
            self.markers.add(model, "traffic", text)

    def _reload(self, model: str, kind: str, what: str, action):
        self.metrics.poll_once()  # the statistics API restarts at a reload: keep its batch counts up to now
        band = self.markers.begin(model, kind, what)
        try:
            result = action()
        except Exception as exc:
            self.markers.finish(band, detail=str(exc), ok=False, text=f"{what} — not applied")
            raise
        self.markers.finish(band, detail=result.diff)
        if result.contract:
            self._follow_contract(model, result.contract)
        return result

    def _follow_contract(self, model: str, changes: tuple[str, ...]) -> None:
        """After a confirmed contract change, running traffic to the model is rebuilt for the new contract (its
        requests are encoded from what the model now serves) instead of failing on the old one."""
        spec = self.load.spec
        if not self.load.running or spec is None or model not in load_targets(spec):
            return
        self.stop_traffic(f"traffic stop: {model}'s contract changed ({'; '.join(changes)})")
        try:
            self.start_traffic(spec)
        except (ValueError, RuntimeError) as exc:
            self.markers.add(model, "traffic", f"traffic not restarted for the new contract: {exc}")
            return
        self.markers.add(model, "traffic", "traffic rebuilt for the new contract: requests now match what it serves")


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
