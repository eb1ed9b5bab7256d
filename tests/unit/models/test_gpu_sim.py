"""The simulated GPU's cost model, outside Triton (model_repository/gpu_sim/1/model.py is plain Python). Its effects
on a live server are measurements: bench/gpu_sim_effects.py and the instance-sweep and queue-delay scenarios."""
from __future__ import annotations

import pytest

from tests.helpers import model_module

cost_model = model_module("gpu_sim").CostModel


def test_cost_model_reads_config_parameters():
    cost = cost_model.from_parameters(
        {"compute_us_batch1": {"string_value": "1000"}, "compute_batch_exponent": {"string_value": "0.5"}}
    )
    assert cost.compute_us(1) == pytest.approx(1000)
    assert cost.compute_us(4) == pytest.approx(2000)  # sub-linear: 4x the work, 2x the time
    assert cost.copy_us(2048) == pytest.approx(2 * cost.copy_us_per_kib)


def test_compute_is_linear_past_saturation():
    cost = cost_model(compute_us_batch1=1000, compute_batch_exponent=0.5, compute_saturation_batch=16)
    assert cost.compute_us(32) == pytest.approx(2 * cost.compute_us(16))
    assert cost.compute_us(16) / 16 < cost.compute_us(1)  # per-item cost falls with batching


def test_an_overflow_exponent_makes_batches_past_saturation_slower_per_item():
    cost = cost_model(compute_us_batch1=1000, compute_batch_exponent=0.5, compute_saturation_batch=4,
                      compute_overflow_exponent=2.0)
    assert cost.compute_us(8) == pytest.approx(4 * cost.compute_us(4))  # twice the batch, four times the time
    assert cost.compute_us(8) / 8 > cost.compute_us(4) / 4
