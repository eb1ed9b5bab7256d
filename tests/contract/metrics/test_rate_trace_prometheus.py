"""A rate trace imported from a real Prometheus that scraped the session tritonserver while traffic ran: its steps
hold what Prometheus answers for the query, and the server's answers show in every one."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request

from app.traffic.form import import_prometheus
from loadgen.rate_trace.prometheus_range import promql_range_query
from loadgen.run import LoadRun
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode
from tests.contract.metrics.test_prometheus_source import prometheus  # noqa: F401 - the fixture: a Prometheus
from tests.helpers import wait_until

RATE = 40.0  # req/s, constant arrivals: light for 2 cores, and every 1 s scrape sees more
SECONDS = 8.0
QUERY = 'sum(rate(nv_inference_request_success{model="gpu_sim"}[3s]))'


def _get(base: str, path: str, params: dict[str, str]) -> dict:
    with urllib.request.urlopen(f"{base}{path}?{urllib.parse.urlencode(params)}", timeout=10) as resp:
        return json.loads(resp.read())


def _scraped(base: str) -> bool:
    try:
        answer = _get(base, "/api/v1/query", {"query": 'nv_inference_request_success{model="gpu_sim"}'})
        return bool(answer["data"]["result"])
    except OSError:
        return False


def test_a_trace_imported_from_prometheus_holds_its_answer_for_every_step(triton, prometheus, tmp_path):  # noqa: F811
    wait_until(lambda: _scraped(prometheus), 60, "Prometheus to start and scrape Triton once")
    spec = LoadSpec(mode=Mode.OPEN, rate=RATE, arrival=ArrivalSpec(kind=ArrivalKind.CONSTANT), duration_s=SECONDS,
                    drain_s=2.0, seed=1)
    records: list = []
    t0 = time.time()
    asyncio.run(LoadRun(spec, triton.url, [records.extend]).run())
    assert sum(r.outcome.value == "ok" for r in records) > 0, "no request was answered"
    # the middle of the run: each rate's 3 s look-back inside the traffic, the ends left out
    start, end = t0 + 4, t0 + SECONDS - 1
    wait_until(lambda: time.time() > end + 3, 10, "the scrapes after the window")  # one more scrape past the end
    path, trace = import_prometheus(prometheus, QUERY, start, end, "1s", tmp_path / "traces")
    answer = _get(prometheus, *promql_range_query(QUERY, start, end, "1s"))  # the same question, asked directly
    (series,) = answer["data"]["result"]
    print(f"imported {len(trace.rates)} steps of {trace.step_s:g} s: {trace.rates}; saved {path}")
    assert trace.step_s == 1.0 and len(trace.rates) >= 3, trace
    assert list(trace.rates) == [float(value) for _, value in series["values"]], series["values"]
    assert all(rate > 0 for rate in trace.rates), trace.rates  # traffic was answered in every step
    assert path.exists() and path.read_text().startswith("t,rate\n")
