"""Parsing Triton's exposition text captured from a real server."""
from __future__ import annotations

import pytest

from app.metrics.scrape import parse_metrics
from tests.unit.metrics.captures import FIXTURES, prom, scrape


def test_counters_and_models_from_a_real_capture():
    s = scrape("s2_after_300", t=12.5)
    assert s.t == 12.5
    assert set(s.models) == {"gpu_sim", "mlp", "stream_acc"}
    gpu = s.models["gpu_sim"]
    assert gpu.counters["nv_inference_request_success"] == 300
    assert gpu.counters["nv_inference_count"] == 300
    assert gpu.counters["nv_inference_exec_count"] == 108
    assert gpu.counters["nv_inference_queue_duration_us"] > 0
    assert gpu.failures == {"OTHER": 0, "BACKEND": 0, "CANCELED": 0, "REJECTED": 0}
    assert gpu.pending == 0
    assert s.models["mlp"].counters["nv_inference_count"] == 0


def test_quantiles_are_floats_after_traffic_and_none_before():
    busy = scrape("s2_after_300", 0).models["gpu_sim"]
    p50 = busy.quantile("nv_inference_request_summary_us", 0.5)
    p99 = busy.quantile("nv_inference_request_summary_us", 0.99)
    assert 0 < p50 <= p99
    assert busy.quantile("nv_inference_queue_summary_us", 0.99) > 0
    idle = scrape("s0_idle", 0).models["gpu_sim"]
    assert idle.quantile("nv_inference_request_summary_us", 0.99) is None  # Triton writes "Nan"


def test_failures_by_reason_after_rejections():
    assert scrape("s3_after_config_reload", 0).models["gpu_sim"].failures["REJECTED"] == 58


def test_cpu_present_and_gpu_absent_on_a_cpu_server():
    s = scrape("s1_after_200", 0)
    assert 0 <= s.cpu_util <= 1
    assert s.gpu_util is None and s.gpu_mem_bytes is None and s.gpu_mem_total_bytes is None


def test_gpu_gauges_averaged_and_summed_over_gpus():
    s = parse_metrics(prom("s1_after_200") + (FIXTURES / "gpu_lines.prom").read_text(), 0)
    assert s.gpu_util == pytest.approx(0.5)
    assert s.gpu_mem_bytes == 4e9
    assert s.gpu_mem_total_bytes == 2 * 42949672960


def test_versions_are_summed_and_quantiles_take_the_worst():
    text = """# TYPE nv_inference_count counter
nv_inference_count{model="m",version="1"} 3
nv_inference_count{model="m",version="2"} 4
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 1
nv_inference_request_failure{model="m",reason="REJECTED",version="2"} 2
# TYPE nv_inference_request_summary_us summary
nv_inference_request_summary_us{model="m",version="1",quantile="0.99"} 100
nv_inference_request_summary_us{model="m",version="2",quantile="0.99"} 250
nv_inference_request_summary_us{model="m",version="3",quantile="0.99"} Nan
"""
    m = parse_metrics(text, 0).models["m"]
    assert m.counters == {"nv_inference_count": 7}
    assert m.failures == {"REJECTED": 3}
    assert m.quantile("nv_inference_request_summary_us", 0.99) == 250
