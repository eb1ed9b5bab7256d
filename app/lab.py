"""One Lab per server: the load generator, metrics poller, event log and config service it shares."""
from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

from app.config.apply import ConfigService
from app.events import EventLog
from app.experiments.compare import capture
from app.experiments.store import Experiment, ExperimentStore
from app.metrics.poller import MetricsPoller
from app.paths import MODEL_REPOSITORY, state_dir
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint, remote_endpoint
from app.server.status import ServerStatus, fetch_status
from loadgen.controller import LoadController


class Lab:
    """Own everything that runs in the background for one server; pages only read and ask."""

    def __init__(self, endpoint: Endpoint, repo: Path | None, server: EmbeddedServer | None = None,
                 config_name: str | None = None) -> None:
        self.server = server
        self.repo = repo
        self.config_name = config_name
        self.events = EventLog()
        self.experiments = ExperimentStore(state_dir() / "experiments.sqlite")
        self._lock = threading.RLock()
        self._attach(endpoint)

    @classmethod
    def create(cls, environ: dict | None = None) -> "Lab":
        """Use TRITON_URL's server when set, else start the embedded one."""
        env = os.environ if environ is None else environ
        remote = remote_endpoint(env)
        if remote is not None:
            repo = env.get("TRITON_MODEL_REPOSITORY")
            return cls(remote, Path(repo) if repo else None, config_name=env.get("TRITON_MODEL_CONFIG_NAME") or None)
        repo = Path(env.get("TBL_MODEL_REPOSITORY", MODEL_REPOSITORY))
        server = EmbeddedServer(ServerOptions(model_repository=repo))
        return cls(server.start(), repo, server)

    @property
    def embedded(self) -> bool:
        """Return True when this lab started the server itself."""
        return self.server is not None

    def status(self) -> ServerStatus:
        """Return what the server says about itself (up=False when it is down)."""
        return fetch_status(self.endpoint)

    def restart(self) -> None:
        """Restart the embedded server on the same ports; traffic stops, metrics continue."""
        if self.server is None:
            raise RuntimeError("the server is remote (TRITON_URL); restart it where it runs")
        with self._lock:
            self.load.stop()
            self.metrics.stop()
            old = self.endpoint
            self.server.options = replace(self.server.options, **_ports(old))
            self.events.add("*", "restart", "server restart")
            self._attach(self.server.restart())

    def apply(self, model: str, config, what: str):
        """Hot-reload a model with a new config, persist it, and mark the change on the charts."""
        result = self.config.apply(model, config)
        self.events.add(model, "apply", what, result.diff)
        return result

    def undo(self, model: str):
        """Go back to the model's previous config version."""
        result = self.config.undo(model)
        self.events.add(model, "undo", "undo", result.diff)
        return result

    def save_experiment(self, label: str) -> Experiment:
        """Store the current (or last) traffic run with the config it ran against."""
        snap = self.load.snapshot(window_s=3600)
        if snap.spec is None:
            raise ValueError("no traffic has run yet: start traffic, then save it as an experiment")
        model = snap.spec.model
        rows = self.metrics.snapshot(model=model, window_s=900).timeline
        exp = capture(label.strip() or f"{model} run", model, self.config.current_text(model), snap, rows)
        return self.experiments.get(self.experiments.add(exp))

    def close(self) -> None:
        """Stop traffic, polling and the embedded server."""
        self.load.stop()
        self.metrics.stop()
        if self.server is not None:
            self.server.stop()

    def _attach(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        log = self.server.log_tail if self.server is not None else None
        self.config = ConfigService(endpoint, self.repo, server_log=log, config_name=self.config_name)
        self.metrics = MetricsPoller(endpoint)
        self.metrics.start()
        self.load = LoadController(url=endpoint.http_url)


def _ports(endpoint: Endpoint) -> dict:
    from urllib.parse import urlparse

    return {
        "http_port": urlparse(endpoint.http_url).port,
        "grpc_port": int(endpoint.grpc_url.rsplit(":", 1)[1]),
        "metrics_port": urlparse(endpoint.metrics_url).port,
    }
