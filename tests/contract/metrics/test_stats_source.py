"""Figures without /metrics on a hand-started server: the statistics API gives the window /metrics gives, counts
every request across the reset a reload makes, and stands in while /metrics fails."""
from __future__ import annotations

import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import tritonclient.http as http

from app.metrics.poller import MetricsPoller
from app.metrics.scrape import fetch_text, parse_metrics
from app.metrics.statistics_api import parse_stats, stats_url
from app.metrics.stats_source import MISSING, STATISTICS
from app.server.free_ports import free_port
from tests.helpers import reload, wait_until
from tests.unit.metrics.test_stats_source import COUNTS, PER_REQUEST, close

MODEL = "var_dims"


def _send(endpoint, n: int, threads: int = 8) -> None:
    def one(i: int) -> None:
        client = http.InferenceServerClient(endpoint.host_port)
        values = http.InferInput("VALUES", [1, 1 + i % 5], "FP32")
        values.set_data_from_numpy(np.ones((1, 1 + i % 5), np.float32))
        client.infer(MODEL, [values])
        client.close()

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n)))


def _successes(endpoint) -> tuple[float, int]:
    """Return var_dims' successes as /metrics and the statistics API count them."""
    values = parse_metrics(fetch_text(endpoint.metrics_url), 0.0).models[MODEL]
    metrics = values.counters["nv_inference_request_success"]
    stats = parse_stats(fetch_text(stats_url(endpoint.http_url)))[MODEL].counts["success"]
    return metrics, stats


def _settle(endpoint, metrics: float, stats: int) -> None:
    """Wait until both sources count what was sent (a response can reach the client before its counters move)."""
    wait_until(lambda: _successes(endpoint) == (metrics, stats), 15, f"successes {metrics}/{stats}")


def test_without_metrics_the_window_equals_the_one_from_metrics_on_the_same_traffic(explicit_server):
    endpoint = explicit_server.endpoint
    wrong = replace(endpoint, metrics_url=f"http://127.0.0.1:{free_port()}/metrics")  # nothing listens there
    by_metrics, by_stats = MetricsPoller(endpoint, models=(MODEL,)), MetricsPoller(wrong, models=(MODEL,))
    metrics0, stats0 = _successes(endpoint)
    t0 = time.time()
    by_metrics.poll_once(), by_stats.poll_once()
    n = 400
    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(_send, endpoint, n)
        while not sending.done():
            time.sleep(0.3)
            by_metrics.poll_once(), by_stats.poll_once()
        sending.result()
    _settle(endpoint, metrics0 + n, stats0 + n)
    by_metrics.poll_once(), by_stats.poll_once()
    t1 = time.time()
    a, b = by_metrics.window(MODEL, t0, t1), by_stats.window(MODEL, t0, t1)
    shown = {k: (a[k], b[k]) for k in COUNTS + PER_REQUEST}
    print("metrics vs statistics API:", shown)
    assert a["request_count"] == b["request_count"] == n, shown
    assert all(a[k] == b[k] for k in COUNTS), shown
    assert all(close(a[k], b[k]) for k in PER_REQUEST), shown
    snap = by_stats.snapshot(MODEL, window_s=3600)
    assert snap.up and snap.source == STATISTICS and snap.missing == MISSING, snap.source
    assert "Connection refused" in snap.source_note and wrong.metrics_url in snap.source_note
    assert all(row["pending"] is None and row["p99_us"] is None for row in snap.timeline)
    assert by_metrics.snapshot(MODEL).source == "metrics" and by_metrics.snapshot(MODEL).missing == ()


def test_a_reload_restarts_the_statistics_and_the_window_still_counts_every_request(explicit_server):
    endpoint = explicit_server.endpoint
    wrong = replace(endpoint, metrics_url=f"http://127.0.0.1:{free_port()}/metrics")
    by_stats = MetricsPoller(wrong, models=(MODEL,))
    by_metrics = MetricsPoller(endpoint, models=(MODEL,))
    client = http.InferenceServerClient(endpoint.host_port)
    original = client.get_model_config(MODEL)
    t0 = time.time()
    by_stats.poll_once(), by_metrics.poll_once()
    metrics0, stats0 = _successes(endpoint)
    _send(endpoint, 40)
    _settle(endpoint, metrics0 + 40, stats0 + 40)
    by_stats.poll_once(), by_metrics.poll_once()
    from app.config.model_config import from_json  # noqa: PLC0415

    changed = from_json(original)
    changed.dynamic_batching.max_queue_delay_microseconds = 250
    try:
        reload(endpoint, MODEL, changed)  # the statistics API starts again from zero; /metrics keeps counting
        _send(endpoint, 10)
        _settle(endpoint, metrics0 + 50, 10)
        by_stats.poll_once(), by_metrics.poll_once()
    finally:
        reload(endpoint, MODEL, from_json(original))
    t1 = time.time()
    a, b = by_metrics.window(MODEL, t0, t1), by_stats.window(MODEL, t0, t1)
    assert a["request_count"] == b["request_count"] == 50, (a["request_count"], b["request_count"])
    assert b["resets"] == 1 and a["resets"] == 0, (a["resets"], b["resets"])


def test_it_stands_in_while_metrics_fail_and_switches_back_without_losing_an_interval(explicit_server):
    endpoint = explicit_server.endpoint
    broken = {"metrics": False}

    def fetch(url: str) -> str:
        if broken["metrics"] and url == endpoint.metrics_url:
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        return fetch_text(url)

    poller = MetricsPoller(endpoint, models=(MODEL,), fetch=fetch, metrics_retry_s=0.0)
    poller.poll_once()
    sources, counts = [], []
    for down in (False, True, True, False, False):
        broken["metrics"] = down
        metrics0, stats0 = _successes(endpoint)
        _send(endpoint, 7, threads=2)
        _settle(endpoint, metrics0 + 7, stats0 + 7)
        sample = poller.poll_once()
        sources.append(sample.source)
        counts.append(sample.rows[MODEL]["request_count"])
    # Back from the statistics API, the first interval is theirs: /metrics has no baseline yet.
    assert sources == ["metrics", STATISTICS, STATISTICS, STATISTICS, "metrics"], sources
    assert counts == [7] * 5, counts
