"""token_sim's cost of one decode step, outside Triton. Its batchings on a live server are measurements:
bench/token_sim_batchings.py and the three-batchings scenario."""
from __future__ import annotations

import pytest

from tests.helpers import model_module


def test_step_cost_reads_config_parameters():
    cost = model_module("token_sim").StepCost.from_parameters({"compute_us_batch1": {"string_value": "1000"},
                                                               "compute_batch_exponent": {"string_value": "0.5"}})
    assert cost.compute_us(4) == pytest.approx(2000)  # sub-linear: 4 rows, 2x the time of one
    assert cost.compute_us(32) == pytest.approx(2 * cost.compute_us(16))  # linear past saturation (16)
