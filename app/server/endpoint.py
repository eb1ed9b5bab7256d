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
    host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
    # Triton's defaults are three ports in a row (8000, 8001, 8002): gRPC and metrics follow the HTTP port
    # unless named (ModelControl checks that the gRPC port answers for the same server before it uses it).
    grpc = env.get("TRITON_GRPC_URL") or f"{host}:{port + 1}"
    metrics = env.get("TRITON_METRICS_URL") or f"{parsed.scheme}://{host}:{port + 2}/metrics"
    return Endpoint(url, grpc, metrics)
