"""One Lab per server: the composition root of the parts that run in the background for it."""
from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from app.config.apply import ConfigService
from app.config.fleet import FleetApply, fleet_replicas
from app.experiments.compare import capture
from app.experiments.jobs import Jobs
from app.experiments.meter import Window
from app.experiments.store import Experiment, ExperimentStore
from app.figures import WindowFigures, impact, measure
from app.markers import ALL_MODELS, Marker, MarkerLog
from app.metrics.poller import MetricsPoller
from app.metrics.promql import PromQLSource
from app.paths import MODEL_REPOSITORY, state_dir
from app.server.docker_server import DockerOptions, DockerServer
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint, remote_endpoint
from app.server.status import ServerStatus, fetch_status
from app.timeline_store import TimelineKeeper, TimelineStore
from app.traffic import load_targets, target_rate
from loadgen.controller import LoadController
from loadgen.report import describe_load
from loadgen.spec import LoadSpec


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

    @classmethod
    def create(cls, environ: dict | None = None) -> "Lab":
        """Use TRITON_URL's server when set, else start one: the embedded server, or a Triton container with
        TBL_SERVER=docker; build and wire every part."""
        env = os.environ if environ is None else environ
        endpoint = remote_endpoint(env)
        server = None
        config_name = None
        backend = env.get("TBL_SERVER", "embedded").strip() or "embedded"
        if backend not in ("embedded", "docker"):
            raise ValueError(f"TBL_SERVER must be embedded or docker, got {backend!r}")
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
        markers = MarkerLog()
        metrics = MetricsPoller(endpoint)
        load = LoadController(endpoint.http_url, held=markers.held)
        load.worker.prestart()  # the generator's process imports while the dashboard starts
        store = state_dir() / "experiments.sqlite"
        scope = f"{server.kind}:{Path(repo).resolve()}" if server is not None else f"remote:{endpoint.http_url}"
        keeper = TimelineKeeper(TimelineStore(store, scope), metrics, load, markers)
        keeper.restore()  # what an earlier dashboard process of this lab saw, before the first poll
        metrics.start()
        keeper.start()
        lab = cls(
            endpoint, repo, server=server, markers=markers, metrics=metrics,
            config=ConfigService(endpoint, repo, server_log=server.log_tail if server else None, config_name=config_name),
            load=load, experiments=ExperimentStore(store), keeper=keeper,
        )
        if env.get("TBL_PROMETHEUS_URL"):
            lab.fleet = PromQLSource(env["TBL_PROMETHEUS_URL"], job=env.get("TBL_PROMETHEUS_JOB") or None)
        lab.locust_url = env.get("TBL_LOCUST_URL") or None
        replicas = fleet_replicas(env)
        if replicas:
            lab.fleet_apply = FleetApply(lab.config, replicas, markers)
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
        """Return what the server says about itself (up=False when it is down)."""
        return fetch_status(self.endpoint)

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
                self.server.options = replace(self.server.options, **_ports(self.endpoint))
                endpoint = self.server.restart()
                ok = True
            finally:
                self.markers.finish(band, ok=ok, text=None if ok else "server restart failed")
            if endpoint != self.endpoint:  # same ports asked for; follow the server if it had to move
                self.endpoint = endpoint
                self.config.retarget(endpoint)
                self.load.url = endpoint.http_url
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

    def undo(self, model: str):
        """Go back to the model's previous config version."""
        return self._reload(model, "undo", "undo", lambda: self.config.undo(model))

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

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> WindowFigures:
        """Return the window figures of [t0, t1); client figures from the load runs that sent to the model."""
        spec = self.load.spec
        figures = measure(self.metrics, self.load, model, t0, t1, include_held)
        if "all" in figures.client and model in load_targets(spec):  # what the current run asks to send
            figures.client["all"]["target_rps"] = target_rate(spec)
        return figures

    def impact(self, marker: Marker, model: str, span_s: float = 10.0) -> dict:
        """Return a model's before/after figures around a change, requests held by its reload left out."""
        return impact(marker, lambda t0, t1: self.measure(model, t0, t1, include_held=False), span_s)

    def save_experiment(self, label: str, now: float | None = None) -> Experiment:
        """Store the current (or last) traffic run since the model's last config change."""
        snap = self.load.snapshot(window_s=0)
        if snap.spec is None or snap.started_at is None:
            raise ValueError("no traffic has run yet: start traffic, then save it as an experiment")
        model = snap.spec.model
        now = time.time() if now is None else now
        change = self.markers.last_change(model)
        start = max(snap.started_at + snap.spec.warmup_s, change.settled + 1.0 if change else 0.0)
        end = min(now, snap.started_at + snap.elapsed_s)
        if end - start < 2.0:
            raise ValueError("less than 2 s of traffic since the last config change: let it run, then save")
        figures = self.measure(model, start, end, include_held=False)
        reloads = [[m.t, m.end] for m in self.markers.list(model, since=snap.started_at) if m.band and m.end is not None
                   and m.t < end]
        exp = capture(label.strip() or f"{model} run", model, self.config.current_text(model), snap.spec, figures,
                      self._seconds(model, snap.started_at, start, end), reloads, since=change.text if change else "")
        return self.experiments.get(self.experiments.add(exp))

    def _seconds(self, model: str, run_start: float, t0: float, t1: float) -> list[dict]:
        """Return the run's seconds inside [t0, t1) as measurement windows: client buckets (with every latency)
        and the counter differences of the polls that ended in each second."""
        out = []
        for k in range(math.ceil(t0 - run_start), math.floor(t1 - run_start)):
            a = run_start + k
            buckets = self.load.buckets(a, a + 1.0, model)[0]
            delta, batches = self.metrics.delta(model, a, a + 1.0)
            out.append(Window(a, a + 1.0, buckets, delta, batches).to_dict())
        return out

    def close(self) -> None:
        """Stop a running study, traffic, polling and the embedded server."""
        if self.jobs.running:
            self.jobs.cancel(wait_s=30.0)
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
        return result


def _ports(endpoint: Endpoint) -> dict:
    from urllib.parse import urlparse

    return {
        "http_port": urlparse(endpoint.http_url).port,
        "grpc_port": int(endpoint.grpc_url.rsplit(":", 1)[1]),
        "metrics_port": urlparse(endpoint.metrics_url).port,
    }
