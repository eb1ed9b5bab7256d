"""Ask a server for its version and the state of each model; never raise on a dead server."""
from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field

from app.server.endpoint import Endpoint


@dataclass(frozen=True)
class ModelState:
    """One model as the repository index reports it."""

    name: str
    version: str
    state: str
    reason: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """What the server says about itself, or why it could not be asked."""

    up: bool
    ready: bool = False
    version: str = ""
    models: tuple[ModelState, ...] = field(default=())
    error: str | None = None


def fetch_status(endpoint: Endpoint, timeout_s: float = 2.0) -> ServerStatus:
    """Return the server's status; a dead or restarting server gives up=False with the reason."""
    try:
        meta = _request(f"{endpoint.http_url}/v2", timeout_s)
        index = _request(f"{endpoint.http_url}/v2/repository/index", timeout_s, body=b"{}")
        ready = _ok(f"{endpoint.http_url}/v2/health/ready", timeout_s)
    except (OSError, ValueError) as exc:
        return ServerStatus(up=False, error=f"{endpoint.http_url} is not answering: {exc}")
    models = tuple(
        ModelState(m["name"], str(m.get("version", "")), m.get("state", "UNKNOWN"), m.get("reason", ""))
        for m in index
    )
    return ServerStatus(up=True, ready=ready, version=meta.get("version", ""), models=models)


def _request(url: str, timeout_s: float, body: bytes | None = None):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read() or b"null")


def _ok(url: str, timeout_s: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status == 200
    except OSError:
        return False
