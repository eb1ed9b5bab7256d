"""Addresses of one Triton server."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlparse

from app.server.control_key import VARIABLE, key_headers


@dataclass(frozen=True)
class Endpoint:
    """The HTTP, gRPC and metrics addresses of a server, and the key its model-repository API wants (if locked)."""

    http_url: str
    grpc_url: str
    metrics_url: str
    # A secret: kept out of repr (logs, pages, tracebacks) and of equality (the same server, whatever the key).
    control_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def control_headers(self) -> dict[str, str]:
        """Return the HTTP header every model-repository call carries: load, unload, index."""
        return key_headers(self.control_key)

    @property
    def grpc_control_headers(self) -> dict[str, str]:
        """Return the gRPC metadata every model-repository call over gRPC carries (Triton prefixes the name)."""
        return key_headers(self.control_key, grpc=True)

    @property
    def host_port(self) -> str:
        """Return host:port of the HTTP endpoint (the form tritonclient expects)."""
        return urlparse(self.http_url).netloc


def port_options(endpoint: Endpoint) -> dict[str, int | None]:
    """Return the server options (http_port, grpc_port, metrics_port) that ask a server for this endpoint's ports:
    a restart on the same ones. The gRPC address is host:port, with no scheme."""
    return {"http_port": urlparse(endpoint.http_url).port, "grpc_port": int(endpoint.grpc_url.rsplit(":", 1)[1]),
            "metrics_port": urlparse(endpoint.metrics_url).port}


def remote_endpoint(environ: dict | None = None) -> Endpoint | None:
    """Return the server named by TRITON_URL (and TRITON_GRPC_URL, TRITON_METRICS_URL, TRITON_CONTROL_KEY), or None
    when unset."""
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
    return Endpoint(url, grpc, metrics, env.get(VARIABLE, "").strip() or None)
