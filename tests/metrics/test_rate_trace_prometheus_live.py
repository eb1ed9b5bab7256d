"""A rate trace imported from a real Prometheus that scraped the session tritonserver while traffic ran: its rates
are the rate the server answered."""
from __future__ import annotations

import asyncio
import time
import urllib.parse
import urllib.request

from app.traffic.form import import_prometheus
from loadgen.run import LoadRun
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode
from tests.helpers import wait_until
from tests.metrics.test_prometheus_source import prometheus  # noqa: F401 - the fixture: a Prometheus on free ports

RATE = 80.0  # req/s, constant arrivals: light for 2 cores, and every 1 s scrape sees ~80 more
SECONDS = 8.0
QUERY = 'sum(rate(nv_inference_request_success{model="gpu_sim"}[3s]))'


def _scraped(base: str) -> bool:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": 'nv_inference_request_success{model="gpu_sim"}'})
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return b'"result":[{' in resp.read()
    except OSError:
        return False


def test_a_trace_imported_from_prometheus_has_the_rate_the_server_answered(triton, prometheus, tmp_path):  # noqa: F811
    wait_until(lambda: _scraped(prometheus), 60, "Prometheus to start and scrape Triton once")
    spec = LoadSpec(mode=Mode.OPEN, rate=RATE, arrival=ArrivalSpec(kind=ArrivalKind.CONSTANT), duration_s=SECONDS,
                    drain_s=2.0, seed=1)
    records: list = []
    t0 = time.time()
    asyncio.run(LoadRun(spec, triton.url, [records.extend]).run())
    t1 = time.time()
    ok = sum(r.outcome.value == "ok" for r in records)
    assert ok >= 0.95 * RATE * SECONDS, f"{ok} answered of {len(records)}"
    # the middle of the run: each rate's 3 s look-back inside the traffic, the ends left out
    start, end = t0 + 4, t0 + SECONDS - 1
    wait_until(lambda: time.time() > end + 3, 10, "the scrapes after the window")  # one more scrape past the end
    path, trace = import_prometheus(prometheus, QUERY, start, end, "1s", tmp_path / "traces")
    done = [r.done_s for r in records if r.outcome.value == "ok"]  # the client's own count: answers a second
    measured = sum(1.0 <= t < SECONDS - 1 for t in done) / (SECONDS - 2)
    rates = sorted(trace.rates)
    median = rates[len(rates) // 2]
    print(f"imported {len(trace.rates)} steps of {trace.step_s:g} s: {trace.rates}; sent {len(records)} in "
          f"{t1 - t0:.1f} s; saved {path}")
    assert trace.step_s == 1.0 and len(trace.rates) >= 3, trace
    assert abs(median - measured) <= 0.15 * measured, (median, measured, trace.rates)
    assert path.exists() and path.read_text().startswith("t,rate\n")
