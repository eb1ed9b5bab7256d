"""Measurement windows: exact edges, late answers counted where they were sent, the settling rule, storage."""
from __future__ import annotations

import pytest

from app.timeline.meter import Edge, Meter, MeasuredWindow, merged, steady
from app.experiments.sweep.space import Choice, SearchSpace
from app.experiments.sweep.sweeper import Point, operating_point, pareto
from app.metrics.scrape import ModelValues
from app.timeline.figures import Figures
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.stats import Bucket


class FakeLoad:  # pure logic: the meter only needs started_at and subscribe
    started_at = 1000.0

    def subscribe(self, fn):
        self.fn = fn
        return lambda: None


def record(sent: float, latency: float, outcome=Outcome.OK) -> Record:
    return Record("default", "m", 0, 0, sent, sent, latency, outcome, "", 1, False)


def edge(t: float, success: float) -> Edge:
    return Edge(t, ModelValues({"nv_inference_request_success": success, "nv_inference_count": success,
                                "nv_inference_exec_count": success / 2}), None)


def test_a_window_counts_answers_by_when_they_ended_and_sends_where_they_went_out():
    load = FakeLoad()
    meter = Meter(load, None, "m", {"default": 0.050}, clock=lambda: 1e12)  # edges long past: no wait
    load.fn([record(0.1, 0.02), record(0.6, 0.03), record(0.9, 0.2)])  # the last ends at 1.1 s, in window 2
    first = meter.window(edge(1000.0, 0), edge(1001.0, 2))
    load.fn([record(1.2, 0.01)])
    second = meter.window(edge(1001.0, 2), edge(1002.0, 4))
    row1, row2 = first.client()["all"], second.client()["all"]
    assert (row1.ok, row1.sent, row2.ok, row2.sent) == (2, 3, 2, 1)  # the late answer's send stays in 1
    assert row2.goodput_rps == 1.0  # 0.2 s is over the 50 ms SLA
    assert first.server().request_count == 2 and first.server().avg_batch == 2.0


def test_an_edge_reads_the_host_s_cpus_beside_the_model_s_counters():
    """The edge keeps Triton's nv_cpu_utilization (the twin's sign of a busy host); a server without it reads None."""
    from types import SimpleNamespace  # noqa: PLC0415

    stats = '{"model_stats": [{"name": "m", "version": "1", "inference_count": 8, "execution_count": 1}]}'
    counters = 'nv_inference_request_success{model="m",version="1"} 8\n'

    def meter(metrics: str) -> Meter:
        pages = {"metrics": metrics, "stats": stats}
        return Meter(FakeLoad(), SimpleNamespace(metrics_url="metrics", http_url="http://127.0.0.1:1"), "m",
                     fetch=lambda url: pages["metrics" if url == "metrics" else "stats"], clock=lambda: 5.0)
    busy = meter(counters + "nv_cpu_utilization 0.91\n").edge()
    assert busy.cpu_util == pytest.approx(0.91) and busy.stats.execution_count == 1, busy
    assert meter(counters).edge().cpu_util is None


def test_an_edge_that_cannot_be_read_names_the_address_that_did_not_answer():
    """A server the lab did not start (TRITON_URL) has its metrics where TRITON_METRICS_URL says: a study that cannot
    read them says which address failed and what names it, not only that 'the server did not answer'."""
    from types import SimpleNamespace  # noqa: PLC0415

    from app.timeline.meter import ServerGone  # noqa: PLC0415

    def refused(down: str):
        def fetch(url):
            if down in url:
                raise ConnectionRefusedError(111, "Connection refused")
            return 'nv_inference_request_success{model="m",version="1"} 8\n' if "metrics" in url else "{}"
        return Meter(FakeLoad(), SimpleNamespace(metrics_url="http://127.0.0.1:8002/metrics",
                                                 http_url="http://127.0.0.1:8000"), "m", fetch=fetch)
    with pytest.raises(ServerGone) as metrics:
        refused("8002").edge()
    said = str(metrics.value)
    assert "at its metrics at http://127.0.0.1:8002/metrics (TRITON_METRICS_URL" in said and "refused" in said, said
    with pytest.raises(ServerGone) as stats:
        refused("8000").edge()
    said = str(stats.value)
    assert "at its statistics at http://127.0.0.1:8000/v2/models/m/stats" in said, said


def test_windows_merge_and_survive_storage():
    b = Bucket()
    b.count_end(record(0, 0.01), True)
    w1 = MeasuredWindow(0.0, 1.0, {"default": b})
    w2 = MeasuredWindow.from_dict(w1.to_dict())
    w2.t0, w2.t1 = 1.0, 2.0
    whole = merged([w1, w2])
    assert whole.seconds == 2.0 and whole.client()["all"].ok == 2 and whole.client()["all"].throughput_rps == 1.0
    assert MeasuredWindow.from_dict(w1.to_dict()).client() == w1.client()


def _window(t0: float, latencies: list[float]) -> MeasuredWindow:
    b = Bucket()
    for lat in latencies:
        b.count_end(record(t0, lat), True)
    return MeasuredWindow(t0, t0 + 1.0, {"default": b})


def test_a_point_settles_when_one_more_window_barely_moves_it():
    flat = [_window(i, [0.010 + 0.0001 * (k % 10) for k in range(200)]) for i in range(3)]
    assert steady(flat, 0.05, 100)[0]
    rising = [_window(i, [0.010 * (i + 1)] * 200) for i in range(3)]  # a queue building up: p99 keeps moving
    settled, change = steady(rising, 0.05, 100)
    assert not settled and change > 0.3
    assert not steady(flat[:1], 0.05, 100)[0] and not steady(flat, 0.05, 10_000)[0]  # too few windows / samples


def _point(key: str, load: float, rps: float, p99: float) -> Point:
    return Point(Choice.from_key(key), load, figures=Figures.from_dict({"client": {"all": {
        "throughput_rps": rps, "goodput_rps": rps, "p99_ms": p99}}}))


def test_the_operating_point_is_the_best_goodput_inside_the_sla_and_pareto_drops_dominated_points():
    space = SearchSpace(p99_budget_ms=30.0, p99_headroom=0.0)  # the budget alone (the headroom: test_headroom.py)
    points = [_point("i1", 4, 300, 20), _point("i1", 8, 400, 35), _point("i2", 4, 350, 25), _point("i2", 8, 390, 29)]
    assert operating_point(space, points).key == "i2@8"
    assert [p.key for p in pareto(points)] == ["i1@4", "i2@4", "i2@8", "i1@8"]
    assert operating_point(SearchSpace(p99_budget_ms=10.0), points) is None
    with pytest.raises(ValueError):
        merged([])
