"""PromQLSource.window asks Prometheus once: every counter of every replica and of the fleet in one query, so each
increase reads the same scrapes (a fake Prometheus; tests/contract/metrics/test_promql.py runs a real one)."""
from __future__ import annotations

import json
import urllib.parse

import httpx
import pytest

from app.metrics.promql import FLEET, PromQLSource
from app.metrics.scrape import COUNTERS, FAILURE, PENDING

SUCCESS, QUEUE = "nv_inference_request_success", "nv_inference_queue_duration_us"


def row(value: float, what: str, fleet: bool = False, **labels: str) -> dict:
    named = {"tbl_figure": what, **({"tbl_scope": FLEET, "model": "gpu_sim"} if fleet else {}), **labels}
    return {"metric": named, "value": [1796500000.0, str(value)]}


ROWS = [row(10, SUCCESS, instance="a:8002"), row(50_000, QUEUE, instance="a:8002"),
        row(30, SUCCESS, instance="b:8002"), row(60_000, QUEUE, instance="b:8002"),
        row(40, SUCCESS, fleet=True), row(110_000, QUEUE, fleet=True),
        row(2, FAILURE, instance="b:8002", reason="OTHER"), row(2, FAILURE, fleet=True, reason="OTHER"),
        row(1.5, "pending", instance="a:8002"), row(0.5, "pending_trend", fleet=True)]


@pytest.fixture
def asked():
    return []


@pytest.fixture
def rows():
    return list(ROWS)


@pytest.fixture
def source(asked, rows):
    def answer(request: httpx.Request) -> httpx.Response:
        form = {**dict(request.url.params), **dict(urllib.parse.parse_qsl(request.content.decode()))}
        asked.append((request.method, request.url.path, form))
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    src = PromQLSource("http://prom:9090", job="triton", client=httpx.Client(transport=httpx.MockTransport(answer)))
    yield src
    src.close()


def test_a_window_is_one_query_of_every_counter_per_replica_and_for_the_fleet(source, asked):
    figures = source.window("gpu_sim", 30, at=1796500000.25)
    assert len(asked) == 1, [a[2]["query"][:80] for a in asked]  # one query: one view of Prometheus's data
    method, path, form = asked[0]
    assert (method, path, form["time"]) == ("POST", "/api/v1/query", "1796500000.250")
    expr = form["query"]
    for name in (*COUNTERS, FAILURE, PENDING):
        assert f'{name}{{model="gpu_sim",job="triton"}}[30s]' in expr, name
    assert expr.count(" or ") == 2 * (len(COUNTERS) + 3) - 1, expr[:300]
    print(json.dumps({k: {m: v.get(m) for m in ("request_count", "queue_us", "fail_count", "pending")}
                      for k, v in figures.items()}))
    assert figures["a:8002"]["queue_us"] == 5_000 and figures["b:8002"]["queue_us"] == 2_000
    assert figures[FLEET]["queue_us"] == 2_750 and figures[FLEET]["request_count"] == 40
    assert figures["b:8002"]["fail_count"] == 2 and figures[FLEET]["fail_by_reason"] == {"OTHER": 2 / 30}
    assert figures["a:8002"]["pending"] == 1.5 and figures[FLEET]["pending_trend"] == 0.5
    assert "pending" not in figures["b:8002"]


def test_a_model_no_replica_exports_gives_an_empty_fleet(source, rows):
    rows.clear()
    figures = source.window("gpu_sim", 10, at=1796500000.0)
    assert list(figures) == [FLEET] and figures[FLEET]["request_count"] == 0, figures
