"""What a server and its repository can take: GPU count and model names, for validation."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from app.config.errors import ServerQueryError
from app.metrics.exposition import samples
from app.server.control_key import LOCKED_FIX, is_locked
from app.server.endpoint import Endpoint
from app.server.repository import model_names

GPU_METRIC = "nv_gpu_utilization"


@dataclass(frozen=True)
class ServerCaps:
    """The facts validation checks a config against."""

    gpu_count: int = 0
    model_names: frozenset[str] = field(default=frozenset())
    repo: Path | None = None

    @classmethod
    def of_repository(cls, repo: Path, gpu_count: int = 0) -> ServerCaps:
        """Caps of a local repository folder served with gpu_count GPUs."""
        return cls(gpu_count, frozenset(model_names(Path(repo))), Path(repo))


def gpu_count_from_metrics(text: str) -> int:
    """Count the distinct GPUs (gpu_uuid labels) that report nv_gpu_utilization in metrics text."""
    found = samples(text, GPU_METRIC.__eq__)
    return len({labels.get("gpu_uuid", str(i)) for i, (_, labels, _) in enumerate(found)})


def server_gpu_count(endpoint: Endpoint, timeout_s: float = 5.0) -> int:
    """Return how many GPUs the server uses: the GPUs in its nv_gpu_utilization metric.

    A CPU-only server (the embedded one) exports no GPU metrics, so this is 0 there.
    A GPU server started with --allow-gpu-metrics=false also reads as 0: validation then
    refuses KIND_GPU, which is the safe mistake.
    """
    try:
        with urllib.request.urlopen(endpoint.metrics_url, timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        raise ServerQueryError(
            f"cannot read the server's metrics at {endpoint.metrics_url} to count its GPUs: {exc}; "
            "check that the server runs and TRITON_METRICS_URL points at its metrics port"
        ) from exc
    return gpu_count_from_metrics(text)


def served_model_names(endpoint: Endpoint, timeout_s: float = 5.0) -> frozenset[str]:
    """Return the model names in the server's repository index (for a remote server)."""
    request = urllib.request.Request(f"{endpoint.http_url}/v2/repository/index", data=b"{}", method="POST",
                                     headers=endpoint.control_headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return frozenset(entry["name"] for entry in json.loads(resp.read()))
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", errors="replace")[:300]
        fix = f": {LOCKED_FIX}" if is_locked(text) else ""
        raise ServerQueryError(f"cannot list the models of {endpoint.http_url} ({exc}: {text}){fix}") from exc
    except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
        raise ServerQueryError(f"cannot list the models of {endpoint.http_url}: {exc}") from exc


def server_caps(endpoint: Endpoint, repo: Path | None) -> ServerCaps:
    """Return the caps of a server: its GPUs and the models of repo (or of its index when remote)."""
    gpus = server_gpu_count(endpoint)
    if repo is not None:
        return ServerCaps.of_repository(repo, gpus)
    return ServerCaps(gpus, served_model_names(endpoint), None)
