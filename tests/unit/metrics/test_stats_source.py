"""Figures without /metrics: the statistics API under the counters' names, on captures of a real server
(tests/contract/metrics/test_stats_source.py compares both sources on a hand-started one)."""
from __future__ import annotations

from app.metrics.deltas import model_row
from app.metrics.statistics_api import parse_stats
from app.metrics.stats_source import stats_scrape
from tests.unit.metrics.captures import scrape, stats_text

PER_REQUEST = ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us", "compute_us", "request_us")
COUNTS = ("request_count", "infer_count", "exec_count", "fail_count")


def _from_stats(name: str, t: float):
    return stats_scrape(parse_stats(stats_text(name)), t)


def close(a: float | None, b: float | None) -> bool:
    """Within 3 µs per request: /metrics rounds each duration down to whole µs, and compute sums three of them."""
    return a is not None and b is not None and abs(a - b) <= 3.0


def test_captured_statistics_give_the_rows_metrics_give():
    by_metrics = model_row(scrape("s1_after_200", 0.0), scrape("s2_after_300", 2.0), "gpu_sim")
    by_stats = model_row(_from_stats("s1_after_200", 0.0), _from_stats("s2_after_300", 2.0), "gpu_sim")
    shown = {k: (by_metrics[k], by_stats[k]) for k in COUNTS + PER_REQUEST}
    assert all(by_metrics[k] == by_stats[k] for k in COUNTS), shown
    assert by_stats["request_count"] == 100 and by_stats["exec_count"] == 39
    assert all(close(by_metrics[k], by_stats[k]) for k in PER_REQUEST), shown
    assert by_stats["pending"] is None and by_stats["p99_us"] is None and by_stats["fail_by_reason"] == {"UNKNOWN": 0}


def test_a_captured_reload_restarts_the_statistics_and_counts_from_zero():
    row = model_row(_from_stats("s2_after_300", 0.0), _from_stats("s3_after_config_reload", 1.0), "gpu_sim")
    after = parse_stats(stats_text("s3_after_config_reload"))["gpu_sim"]
    assert row["reset"] is True and row["request_count"] == after.counts["success"] == 62, row
