"""Rates and per-request averages from pairs of captured scrapes, across a real counter reset."""
from __future__ import annotations

import itertools

import pytest

from app.metrics.catalog import ROW_KEYS
from app.metrics.deltas import counter_delta, model_row
from app.metrics.scrape import parse_metrics
from tests.unit.metrics.captures import NAMES, scrape

RATE_KEYS = ("infer_rps", "request_rps", "exec_rps", "fail_rps", "infer_count", "request_count", "exec_count",
             "fail_count", "avg_batch", "queue_us", "compute_input_us", "compute_infer_us", "compute_output_us",
             "request_us")


def test_rates_and_averages_between_two_scrapes():
    a, b = scrape("s1_after_200", 100.0), scrape("s2_after_300", 102.0)
    row = model_row(a, b, "gpu_sim")
    assert row["interval_s"] == 2.0 and row["reset"] is False and row["up"] is True
    assert row["request_count"] == row["infer_count"] == 100
    assert row["exec_count"] == 108 - 69
    assert row["infer_rps"] == row["request_rps"] == 50.0
    assert row["avg_batch"] == pytest.approx(100 / 39)
    ca, cb = a.models["gpu_sim"].counters, b.models["gpu_sim"].counters
    for key, counter in (("queue_us", "queue"), ("compute_infer_us", "compute_infer"), ("request_us", "request")):
        name = f"nv_inference_{counter}_duration_us"
        assert row[key] == pytest.approx((cb[name] - ca[name]) / 100)
    assert row["queue_us"] + row["compute_infer_us"] < row["request_us"] * 1.01
    assert row["fail_rps"] == 0 and row["fail_by_reason"]["REJECTED"] == 0
    assert row["p99_us"] >= row["p50_us"] > 0 and row["queue_p99_us"] > 0
    assert row["pending"] == 0 and row["gpu_util"] is None and row["cpu_util"] is not None


def test_config_reload_keeps_counters_and_counts_rejections():
    row = model_row(scrape("s2_after_300", 0.0), scrape("s3_after_config_reload", 4.0), "gpu_sim")
    assert row["reset"] is False
    assert row["request_count"] == 62 and row["fail_count"] == 58
    assert row["fail_by_reason"] == {"OTHER": 0, "BACKEND": 0, "CANCELED": 0, "REJECTED": 58 / 4}


def test_unload_load_reset_counts_from_zero():
    before, after = scrape("s3_after_config_reload", 0.0), scrape("s4_after_unload_load", 2.0)
    row = model_row(before, after, "gpu_sim")
    assert row["reset"] is True
    assert row["request_count"] == row["infer_count"] == 40 and row["exec_count"] == 22
    counters = after.models["gpu_sim"].counters
    assert row["request_us"] == pytest.approx(counters["nv_inference_request_duration_us"] / 40)
    assert row["fail_count"] == 0  # the failure counter survived the unload: 58 -> 58


@pytest.mark.parametrize(("first", "second"), list(itertools.permutations(NAMES, 2)))
def test_never_negative_and_every_column_present(first, second):
    row = model_row(scrape(first, 0.0), scrape(second, 1.0), "gpu_sim")
    assert tuple(row) == ROW_KEYS
    for key in RATE_KEYS:
        assert row[key] is None or row[key] >= 0, key
    assert all(v >= 0 for v in row["fail_by_reason"].values())


def test_counter_delta_rules():
    assert counter_delta(10, 15) == 5
    assert counter_delta(10, 4) == 4
    assert counter_delta(None, 7) == 7
    assert counter_delta(10, 12, reset=True) == 12


def test_no_previous_scrape_gives_gauges_but_no_rates():
    row = model_row(None, scrape("s2_after_300", 5.0), "gpu_sim")
    assert row["infer_rps"] is None and row["interval_s"] is None
    assert row["p99_us"] > 0 and row["pending"] == 0


def test_non_increasing_time_gives_no_rates():
    assert model_row(scrape("s1_after_200", 5.0), scrape("s2_after_300", 5.0), "gpu_sim")["infer_rps"] is None


def test_missing_model_is_an_error_row_and_new_model_counts_from_zero():
    cur = scrape("s2_after_300", 1.0)
    gone = model_row(scrape("s1_after_200", 0.0), cur, "resnet")
    assert gone["error"] == "model 'resnet' is not in /metrics (not loaded?)" and gone["infer_rps"] is None
    empty = parse_metrics("# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.5\n", 0.0)
    fresh = model_row(empty, cur, "gpu_sim")
    assert fresh["request_count"] == 300 and fresh["reset"] is False
