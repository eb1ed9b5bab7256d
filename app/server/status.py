"""Ask a server for its version and the state of each model; never raise on a dead server."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace

from app.server.control_key import LOCKED_FIX, is_locked
from app.server.endpoint import Endpoint


@dataclass(frozen=True)
class ModelState:
    """One model as the repository index reports it."""

    name: str
    version: str
    state: str  # READY, UNAVAILABLE, LOADING, UNLOADING; "" for a folder not loaded (explicit mode)
    reason: str = ""

    @property
    def ready(self) -> bool:
        """Return True when the model serves."""
        return self.state == "READY"

    @property
    def shown_state(self) -> str:
        """Return the state as a person reads it."""
        return self.state or "not loaded"


@dataclass(frozen=True)
class ServerStatus:
    """What the server says about itself, or why it could not be asked."""

    up: bool
    ready: bool = False
    version: str = ""
    models: tuple[ModelState, ...] = field(default=())
    error: str | None = None

    def by_attention(self) -> tuple[ModelState, ...]:
        """Return the models that do not serve first (by name), then the READY ones (by name)."""
        return tuple(sorted(self.models, key=lambda m: (m.ready, m.name, m.version)))


def fetch_status(endpoint: Endpoint, timeout_s: float = 2.0) -> ServerStatus:
    """Return the server's status; a dead or restarting server gives up=False with the reason; a server whose index
    wants a key the endpoint lacks is up, without models, its error naming the fix."""
    meta, ready = {}, False
    try:
        meta = _request(f"{endpoint.http_url}/v2", timeout_s)
        ready = _ok(f"{endpoint.http_url}/v2/health/ready", timeout_s)
        index = repository_call(endpoint, "/v2/repository/index", timeout_s)
    except urllib.error.HTTPError as exc:
        text = _error_text(exc)
        if is_locked(text):
            return ServerStatus(up=True, ready=ready, version=meta.get("version", ""), error=f"{LOCKED_FIX} ({text})")
        return ServerStatus(up=False, error=f"{endpoint.http_url} is not answering: {exc} {text}".strip())
    except (OSError, ValueError) as exc:
        return ServerStatus(up=False, error=f"{endpoint.http_url} is not answering: {exc}")
    models = tuple(
        ModelState(m["name"], str(m.get("version", "")), m.get("state", ""), m.get("reason", ""))
        for m in index
    )
    return ServerStatus(up=True, ready=ready, version=meta.get("version", ""), models=models)


def repository_call(endpoint: Endpoint, path: str, timeout_s: float = 2.0):
    """POST to the server's model-repository API (index, load, unload) with its control key; return the decoded
    answer (None when empty). urllib's request closes its connection: none is left open for Triton's exit to wait on."""
    return _request(f"{endpoint.http_url}{path}", timeout_s, body=b"{}", headers=endpoint.control_headers)


def _request(url: str, timeout_s: float, body: bytes | None = None, headers: dict[str, str] | None = None):
    sent = {**({"Content-Type": "application/json"} if body else {}), **(headers or {})}
    req = urllib.request.Request(url, data=body, headers=sent)
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read() or b"null")


def _error_text(exc: urllib.error.HTTPError) -> str:
    """Return Triton's error text of a refused request ({"error": ...}), or the body as it is."""
    try:
        body = exc.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    try:
        return str(json.loads(body).get("error", body))[:300]
    except (ValueError, AttributeError):
        return body[:300]


def _ok(url: str, timeout_s: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status == 200
    except OSError:
        return False


def with_log_reasons(status: ServerStatus, log_text: str) -> ServerStatus:
    """Return status with a reason for each model the index lists without a state: Triton keeps a model whose
    config it could not even read out of its lifecycle, and says why only in its log ("Poll failed for model
    directory 'M': ...")."""
    if not any(not m.state and not m.reason for m in status.models):
        return status
    reasons: dict[str, str] = {}
    for line in log_text.splitlines():
        for marker in ("Poll failed for model directory '", "failed to load '"):
            at = line.find(marker)
            if at < 0:
                continue
            name, _, rest = line[at + len(marker):].partition("'")
            reasons[name] = rest.lstrip(": ").rstrip('"').replace("\\n", " ").strip() or reasons.get(name, "")
    if not reasons:
        return status
    models = tuple(replace(m, reason=f"{reasons[m.name]} (from the server log)") if not m.state and not m.reason
                   and reasons.get(m.name) else m for m in status.models)
    return replace(status, models=models)
