"""The Serving port: the server itself — its status, what it is, its log, a restart, its GPUs.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_endpoint, _server, _config, _load,
_markers, _metrics, _gpu_memory, _control_mode, _repo, _locust_url, _lock, _lab_models)."""
from __future__ import annotations

import shutil
from dataclasses import replace

from app.config.errors import ConfigError
from app.config.read import settings_of
from app.lab.ports import LabPort, ServerFacts
from app.metrics.gpu import GpuView, gpus_of
from app.metrics.scrape import fetch_text
from app.timeline.markers import ALL_MODELS
from app.paths import MODEL_REPOSITORY, state_dir
from app.server.endpoint import port_options
from app.server.repository import model_names
from app.server.status import ServerStatus, fetch_status, with_log_reasons


class ServingVerbs:
    """The server itself — its status, what it is, its log, a restart, its GPUs."""

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
        devices = tuple(d for g in groups for d in g.gpus)
        return self._gpu_memory.view(model, gpus, sum(g.count for g in groups) or 1, devices,
                                     settled=not self._markers.reloading(model))

    def lab_models(self) -> LabPort:
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
                self._lab_models = type(self).create({"TBL_MODEL_REPOSITORY": str(copy)})
            return self._lab_models
