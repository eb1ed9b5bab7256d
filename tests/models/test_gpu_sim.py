"""The simulated-GPU model: its cost model, and the instance and batching gains on the real server."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from app.paths import MODEL_REPOSITORY
from tests.helpers import closed_loop, read_config, reload


def _cost_module():
    spec = importlib.util.spec_from_file_location("gpu_sim_model", MODEL_REPOSITORY / "gpu_sim/1/model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_cost_model_reads_config_parameters():
    cost = _cost_module().CostModel.from_parameters(
        {"compute_us_batch1": {"string_value": "1000"}, "compute_batch_exponent": {"string_value": "0.5"}}
    )
    assert cost.compute_us(1) == pytest.approx(1000)
    assert cost.compute_us(4) == pytest.approx(2000)  # sub-linear: 4x the work, 2x the time
    assert cost.copy_us(2048) == pytest.approx(2 * cost.copy_us_per_kib)


def test_compute_is_linear_past_saturation():
    cost = _cost_module().CostModel(compute_us_batch1=1000, compute_batch_exponent=0.5, compute_saturation_batch=16)
    assert cost.compute_us(32) == pytest.approx(2 * cost.compute_us(16))
    assert cost.compute_us(16) / 16 < cost.compute_us(1)  # per-item cost falls with batching


def _throughput(triton, config, concurrency=8, seconds=3.0) -> float:
    reload(triton.endpoint.host_port, "gpu_sim", config)
    closed_loop(triton.endpoint.host_port, "gpu_sim", concurrency, 0.5)  # warm up
    ok, failed = closed_loop(triton.endpoint.host_port, "gpu_sim", concurrency, seconds)
    assert failed == 0
    return ok / seconds


def _unbatched(triton, instances: int):
    config = read_config(triton.repo, "gpu_sim")
    config.ClearField("dynamic_batching")
    config.instance_group[0].count = instances
    return config


def test_second_instance_raises_throughput_then_saturates(triton, restore_model):
    restore_model("gpu_sim")
    one = _throughput(triton, _unbatched(triton, 1))
    two = _throughput(triton, _unbatched(triton, 2))
    eight = _throughput(triton, _unbatched(triton, 8))
    print(f"gpu_sim unbatched infer/s: 1 inst {one:.0f}, 2 inst {two:.0f}, 8 inst {eight:.0f}")
    assert two > 1.25 * one  # copies and launches of one instance overlap the other's compute
    assert eight < 1.6 * two  # the shared device saturates: 4x the instances, far from 4x the work


def test_dynamic_batching_raises_throughput(triton, restore_model):
    restore_model("gpu_sim")
    unbatched = _throughput(triton, _unbatched(triton, 1))
    batched_cfg = read_config(triton.repo, "gpu_sim")
    batched_cfg.dynamic_batching.max_queue_delay_microseconds = 2000
    batched = _throughput(triton, batched_cfg)
    print(f"gpu_sim 1 instance infer/s: unbatched {unbatched:.0f}, dynamic batching {batched:.0f}")
    assert batched > 1.5 * unbatched
