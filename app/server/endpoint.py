"""Addresses of one Triton server."""
from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse


@dataclass(frozen=True)
class Endpoint:
    """The HTTP, gRPC and metrics addresses of a server."""

    http_url: str
    grpc_url: str
    metrics_url: str

    @property
    def host_port(self) -> str:
        """Return host:port of the HTTP endpoint (the form tritonclient expects)."""
        return urlparse(self.http_url).netloc


def remote_endpoint(environ: dict | None = None) -> Endpoint | None:
    """Return the server named by TRITON_URL (and TRITON_METRICS_URL), or None when unset."""
    env = os.environ if environ is None else environ
    url = env.get("TRITON_URL", "").strip().rstrip("/")
    if not url:
        return None
    if "://" not in url:
        url = f"http://{url}"
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"TRITON_URL must look like http://HOST:PORT, got {url!r}")
    host = parsed.hostname
    grpc = env.get("TRITON_GRPC_URL", f"{host}:8001")
    metrics = env.get("TRITON_METRICS_URL", f"{parsed.scheme}://{host}:8002/metrics")
    return Endpoint(url, grpc, metrics)
