"""The host's CPU utilisation as a share per answer and per execution a second, fitted to windows' readings."""
from __future__ import annotations

import pytest

from app.twin.host_load import MIN_WINDOWS, fit_host_load


def _reading(rps: float, executions: float, idle: float = 0.1, per_request: float = 5e-5,
             per_execution: float = 1e-4) -> tuple[float, float, float]:
    return rps, executions, idle + per_request * rps + per_execution * executions


def test_it_recovers_the_shares_a_host_showed_and_says_them():
    """Windows of batches of one and of eight at several rates (mlp's probe: 930-8,600 answers/s, 350-1,070
    executions/s): the three shares come back, and a config batching less at the same rate is busier."""
    points = [_reading(930, 930), _reading(5500, 990), _reading(8600, 840), _reading(7900, 415), _reading(1600, 770)]
    load = fit_host_load(points)
    assert load is not None and load.windows == 5 and load.rms < 1e-9, load
    assert (load.idle, load.per_request, load.per_execution) == pytest.approx((0.1, 5e-5, 1e-4)), load
    small, large = load.at(4500, 4500 / 1.3), load.at(4500, 4500 / 8)
    assert small == pytest.approx(0.1 + 0.225 + 4500 / 1.3 * 1e-4) and small > large + 0.25, (small, large)
    assert load.at(100_000, 100_000) == 1.0, "busier than every CPU is not a reading"
    assert "5.00% more per 1,000 answers/s" in load.note and "fitted to 5 windows" in load.note, load.note


def test_no_share_is_negative_and_too_few_windows_fit_nothing():
    """Readings that fall as executions rise would give executions a negative share: it is left out (0) and the
    answers alone carry the load; with fewer than MIN_WINDOWS readings, or none of the rates, there is no fit."""
    falling = [(1000, 100, 0.30), (1000, 1000, 0.25), (3000, 100, 0.50), (3000, 1000, 0.45), (5000, 500, 0.65)]
    load = fit_host_load(falling)
    assert load is not None and load.per_execution == 0.0 and load.per_request > 0, load
    assert load.rms > 0, "a fit left with fewer terms misses some readings"
    assert fit_host_load(falling[:MIN_WINDOWS - 1]) is None
    assert fit_host_load([(r, e, None) for r, e, _ in falling]) is None
