"""Prometheus as the metrics source: the poller reads Triton's series through /federate."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from app.metrics.poller import MetricsPoller
from app.server.free_ports import free_port
from tests.helpers import gpu_sim_input, require_tool, wait_until

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


@pytest.fixture
def prometheus(triton, tmp_path):
    """A real Prometheus on a free loopback port, scraping the session server every second."""
    require_tool(PROMETHEUS, "prometheus")
    target = urllib.parse.urlparse(triton.endpoint.metrics_url).netloc
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs: [{{job_name: triton, static_configs: [{{targets: ['{target}']}}]}}]\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.read()
    except OSError:
        return b""


def _federated(base: str) -> str:
    return f"{base}/federate?" + urllib.parse.urlencode({"match[]": '{job="triton"}'})


def test_poller_counts_requests_through_prometheus_federation(triton, prometheus):
    import tritonclient.http as http

    url = _federated(prometheus)
    wait_until(lambda: b"nv_inference_count" in _get(url), 60, "Prometheus to start and scrape Triton once")
    poller = MetricsPoller(replace(triton.endpoint, metrics_url=url))
    poller.poll_once()
    local = threading.local()  # tritonclient.http clients are gevent-based: one per thread

    def infer(_):
        if not hasattr(local, "client"):
            local.client = http.InferenceServerClient(triton.endpoint.host_port)
        return local.client.infer("gpu_sim", [gpu_sim_input()])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(infer, range(64)))

    def counted():
        poller.poll_once()
        rows = poller.snapshot("gpu_sim", window_s=120).timeline
        return sum((r["request_count"] or 0) for r in rows) >= 64 and rows

    rows = wait_until(counted, 30, "Prometheus to scrape the 64 requests")
    assert sum(r["request_count"] or 0 for r in rows) == 64
    assert any(r["queue_us"] is not None for r in rows)
