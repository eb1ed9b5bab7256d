"""What the lab reads through Prometheus against what the server itself counted: python -m bench.prometheus_reads
[--reps 3] [--json].

One embedded server (gpu_sim) on a temporary copy of model_repository/, one Debian Prometheus scraping it every
second. Each repetition sends open-loop traffic at --rate for --seconds, then waits for two more scrapes, and reads:
  window over-read   PromQLSource.window's request count (increase() over a window from a scrape before the
                     traffic to after it) ÷ the difference of the server's own counter: increase() extrapolates to
                     the window's edges, so counts read high by up to about one scrape interval's share
                     (docs/DEPLOYMENT.md; app/metrics/promql.py)
  trace vs answered  the median step of a rate trace imported from Prometheus (app.traffic.form.import_prometheus,
                     rate over 3 s, the run's middle) ÷ the rate the client counted answers at over the same seconds
Printed per repetition and as min / median / max. The tests check what is read, never by how much it is off
(tests/contract/metrics/test_promql.py, tests/contract/metrics/test_rate_trace_prometheus.py).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

from app.metrics.promql import PromQLSource
from app.metrics.scrape import fetch_text, parse_metrics
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.free_ports import free_port
from app.traffic.form import import_prometheus
from loadgen.run import LoadRun
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
SUCCESS = "nv_inference_request_success"
QUERY = f'sum(rate({SUCCESS}{{model="gpu_sim"}}[3s]))'


def _answered(endpoint) -> float:
    return parse_metrics(fetch_text(endpoint.metrics_url), time.time()).models["gpu_sim"].counters.get(SUCCESS, 0.0)


def _scraped_after(source: PromQLSource, t: float) -> bool:
    try:
        rows = source.query(f'timestamp({SUCCESS}{{model="gpu_sim"}})')
    except Exception:  # noqa: BLE001 - not up yet
        return False
    return bool(rows) and min(value for _, value in rows) > t


def _wait(check, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("Prometheus did not scrape in time")
        time.sleep(0.25)


def repetition(endpoint, source: PromQLSource, base_url: str, rate: float, seconds: float, folder: Path) -> dict:
    """Send one run; return the window's over-read and the imported trace's median against the answered rate."""
    t0 = time.time()
    _wait(lambda: _scraped_after(source, t0))  # a scrape before the traffic opens the window
    before = _answered(endpoint)
    spec = LoadSpec(mode=Mode.OPEN, rate=rate, arrival=ArrivalSpec(kind=ArrivalKind.CONSTANT), duration_s=seconds,
                    drain_s=2.0, seed=1)
    records: list = []
    started = time.time()
    asyncio.run(LoadRun(spec, endpoint.http_url, [records.extend]).run())
    counted = _answered(endpoint) - before
    ended = time.time()
    _wait(lambda: _scraped_after(source, ended + 2))  # two scrapes after the last answer
    at = time.time()
    window = source.window("gpu_sim", math.ceil(at - t0 + 0.5), at)
    read = sum(figures["request_count"] for name, figures in window.items() if name != "fleet")
    start, end = started + 4, started + seconds - 1  # each 3 s rate inside the traffic
    _, trace = import_prometheus(base_url, QUERY, start, end, "1s", folder)
    done = [r.done_s for r in records if r.outcome.value == "ok"]
    answered_rate = sum(1.0 <= t < seconds - 1 for t in done) / (seconds - 2)  # what the 3 s rates look back on
    return {"window_over_read": read / counted, "trace_vs_answered": statistics.median(trace.rates) / answered_rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rate", type=float, default=80.0, help="requests per second, constant arrivals")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbl-prometheus-reads-") as tmp:
        base = Path(tmp)
        repo = shutil.copytree(MODEL_REPOSITORY, base / "repo", ignore=shutil.ignore_patterns("__pycache__"))
        server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                              models=("gpu_sim",), log_dir=base))
        endpoint = server.start()
        target = urllib.parse.urlparse(endpoint.metrics_url).netloc
        (base / "prometheus.yml").write_text("global: {scrape_interval: 1s}\nscrape_configs: "
                                             f"[{{job_name: triton, static_configs: [{{targets: ['{target}']}}]}}]\n")
        port = free_port()
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={base / 'prometheus.yml'}", f"--storage.tsdb.path={base / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        base_url = f"http://127.0.0.1:{port}"
        source = PromQLSource(base_url, job="triton")
        try:
            found = [repetition(endpoint, source, base_url, args.rate, args.seconds, base / "traces")
                     for _ in range(args.reps)]
        finally:
            source.close()
            prometheus.send_signal(signal.SIGTERM)
            prometheus.wait(15)
            server.stop()
    if args.json:
        print(json.dumps(found))
        return
    for key in ("window_over_read", "trace_vs_answered"):
        values = [f[key] for f in found]
        print(f"{key:18} " + " ".join(f"{v:.3f}" for v in values) +
              f"   min {min(values):.3f} median {statistics.median(values):.3f} max {max(values):.3f}")


if __name__ == "__main__":
    main()
