"""One Apply across a fleet: every replica in turn, each verified before the next; when one fails, the ones
already updated get their previous config back, newest first.

The replicas are the lab's own server and the remote servers of a fleet file (TBL_FLEET_FILE, YAML) or of
TBL_FLEET (comma-separated HTTP URLs whose gRPC and metrics ports are the next two, Triton's layout).
Each replica's change is one marker band named after it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

import yaml

from app.config.apply import ApplyResult, ConfigService
from app.config.errors import ConfigError
from app.config.model_config import ModelConfig
from app.server.endpoint import Endpoint

_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")  # host:port is a fine name


class FleetApplyError(ConfigError):
    """A replica refused the change; the replicas updated before it were rolled back (as far as they could)."""


@dataclass(frozen=True)
class Replica:
    """A remote server of the fleet."""

    name: str
    endpoint: Endpoint


def fleet_replicas(env: dict | None = None) -> list[Replica]:
    """Return the fleet's other replicas from TBL_FLEET_FILE or TBL_FLEET (empty: no fleet); each is locked like the
    lab's server, with TRITON_CONTROL_KEY."""
    env = os.environ if env is None else env
    key = env.get("TRITON_CONTROL_KEY", "").strip() or None
    if env.get("TBL_FLEET_FILE"):
        data = yaml.safe_load(Path(env["TBL_FLEET_FILE"]).read_text()) or {}
        return [_replica(item.get("http", ""), f"replicas[{i}].http", item.get("name"), item.get("grpc"),
                         item.get("metrics"), key) for i, item in enumerate(data.get("replicas") or [])]
    return [_replica(url, "TBL_FLEET", key=key)
            for url in filter(None, (u.strip() for u in env.get("TBL_FLEET", "").split(",")))]


def _replica(url: str, where: str, name: str | None = None, grpc: str | None = None,
             metrics: str | None = None, key: str | None = None) -> Replica:
    """Return a replica; gRPC and metrics default to the two ports after HTTP's (Triton's layout)."""
    http = url.strip().rstrip("/")
    parsed = urlparse(http)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{where} must look like http://HOST:PORT, got {http!r}")
    host, port = parsed.hostname, parsed.port or 8000
    return Replica(_name(name or f"{host}:{port}"),
                   Endpoint(http, grpc or f"{host}:{port + 1}", metrics or f"http://{host}:{port + 2}/metrics", key))


def _name(name: str) -> str:
    if not _NAME.match(str(name)):
        raise ValueError(f"a replica name is letters, digits, _ . : - (up to 64); got {name!r}")
    return str(name)


class FleetApply:
    """Apply a model's config on every replica in turn: the lab's own server first, then the others."""

    def __init__(self, local: ConfigService, replicas: list[Replica], markers, local_name: str = "this lab's server"):
        self.markers = markers
        self.services: list[tuple[str, ConfigService]] = [(local_name, local)] + [
            (r.name, ConfigService(r.endpoint, None)) for r in replicas]

    def apply(self, model: str, config: ModelConfig, what: str, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Return the lab's own server's result once every replica serves the config; FleetApplyError (after
        rolling back the replicas already updated) when one cannot."""
        before = {}
        for name, service in self.services:  # every replica answers before any changes
            try:
                before[name] = service.current_text(model)
            except Exception as exc:
                raise FleetApplyError(f"replica {name} does not answer ({exc}); nothing was changed") from exc
        updated: list[tuple[str, ConfigService]] = []
        first: ApplyResult | None = None
        for i, (name, service) in enumerate(self.services):
            band = self.markers.begin(model, "apply", f"{what} — replica {name}")
            try:
                result = service.apply(model, config, note=what, base=base if i == 0 else None,
                                       confirm_contract=confirm_contract)
            except Exception as exc:
                self.markers.finish(band, detail=str(exc), ok=False, text=f"{what} — replica {name}: not applied")
                rolled = self._roll_back(model, updated, before)
                raise FleetApplyError(
                    f"replica {name} could not take the change ({exc}); "
                    + (f"rolled back {', '.join(rolled)}" if rolled else "no replica had been updated")) from exc
            self.markers.finish(band, detail=result.diff)
            updated.append((name, service))
            first = first or result
        return replace(first, replicas=tuple(name for name, _ in updated[1:]))

    def _roll_back(self, model: str, updated: list[tuple[str, ConfigService]], before: dict[str, str]) -> list[str]:
        rolled = []
        for name, service in reversed(updated):
            band = self.markers.begin(model, "apply", f"fleet rollback — replica {name}")
            try:
                result = service.apply_text(model, before[name], note="fleet rollback", confirm_contract=True)
            except Exception as exc:  # noqa: BLE001 - said in the marker and the error; the others still roll back
                self.markers.finish(band, detail=str(exc), ok=False, text=f"fleet rollback — replica {name} failed")
                continue
            self.markers.finish(band, detail=result.diff)
            rolled.append(name)
        return rolled
