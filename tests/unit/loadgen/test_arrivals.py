"""Arrival processes, tested statistically with seeded RNGs and no server."""
from __future__ import annotations

import itertools
import math
from random import Random

import numpy as np
import pytest

from loadgen import arrivals


def take(gen, n: int) -> np.ndarray:
    return np.fromiter(itertools.islice(gen, n), float, n)


def times_until(gen, horizon_s: float) -> np.ndarray:
    """Return arrival times (cumulative gaps) up to horizon_s."""
    out, t = [], 0.0
    for gap in gen:
        t += gap
        if t >= horizon_s:
            break
        out.append(t)
    return np.array(out)


def counts(times: np.ndarray, horizon_s: float, window_s: float) -> np.ndarray:
    return np.histogram(times, bins=int(horizon_s / window_s), range=(0, horizon_s))[0]


def test_constant_gaps_are_exact():
    gaps = take(arrivals.constant(250.0), 1000)
    assert np.all(gaps == pytest.approx(0.004, abs=1e-15))


def test_poisson_has_the_rate_and_exponential_spread():
    rate, n = 50.0, 40_000
    gaps = take(arrivals.poisson(rate, Random(1)), n)
    # Mean gap: standard error 1/sqrt(n) = 0.5 %; 3 % is six standard errors.
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.03)
    # Squared coefficient of variation is 1 for the exponential (0 for constant gaps).
    assert gaps.var() / gaps.mean() ** 2 == pytest.approx(1.0, abs=0.08)
    # P(gap < mean) = 1 - 1/e for the exponential.
    assert np.mean(gaps < 1 / rate) == pytest.approx(1 - math.exp(-1), abs=0.015)


def test_poisson_counts_have_index_of_dispersion_one():
    times = times_until(arrivals.poisson(100.0, Random(2)), 400.0)
    c = counts(times, 400.0, 1.0)
    assert c.var() / c.mean() == pytest.approx(1.0, abs=0.3)


def test_poisson_is_reproducible_with_the_same_seed():
    assert list(itertools.islice(arrivals.poisson(10, Random(7)), 5)) == list(
        itertools.islice(arrivals.poisson(10, Random(7)), 5)
    )


def test_on_off_sends_only_in_on_periods_at_the_mean_rate():
    rate, on_s, off_s, horizon = 40.0, 0.5, 1.5, 400.0
    times = times_until(arrivals.on_off(rate, on_s, off_s, Random(3)), horizon)
    phase = times % (on_s + off_s)
    assert np.all(phase <= on_s + 1e-9)
    assert len(times) / horizon == pytest.approx(rate, rel=0.03)  # 16,000 arrivals: 0.8 % s.e.
    c = counts(times, horizon, 0.5)  # half-second windows: all-or-nothing
    assert c.var() / c.mean() > 20


def test_on_off_starts_mid_cycle_from_start_s():
    gen = arrivals.on_off(10.0, 1.0, 1.0, None, start_s=1.2)  # inside the off period
    first = next(gen)
    assert first > 0.8 - 1e-9  # nothing before the next on period at t=2.0


def test_mmpp_keeps_the_mean_rate_and_is_overdispersed():
    rate, horizon = 20.0, 20_000.0
    times = times_until(arrivals.mmpp(rate, ratio=10.0, high_s=1.0, low_s=4.0, rng=Random(4)), horizon)
    # ~400,000 arrivals in ~4,000 state cycles: the rate's standard error is about 1.2 %.
    assert len(times) / horizon == pytest.approx(rate, rel=0.05)
    c = counts(times, horizon, 1.0)
    assert c.var() / c.mean() > 5  # Poisson gives 1


def test_mmpp_with_ratio_one_is_poisson():
    times = times_until(arrivals.mmpp(30.0, 1.0, 1.0, 1.0, Random(5)), 1000.0)
    c = counts(times, 1000.0, 1.0)
    assert c.mean() == pytest.approx(30.0, rel=0.03)
    assert c.var() / c.mean() == pytest.approx(1.0, abs=0.25)


def test_ramp_grows_linearly_then_holds():
    rate, ramp_s = 1000.0, 10.0
    times = times_until(arrivals.ramp(rate, ramp_s, 0.0, Random(6)), 20.0)
    per_second = counts(times, 20.0, 1.0)
    expected = [rate * (i + 0.5) / ramp_s for i in range(10)] + [rate] * 10
    # Each count is Poisson: allow five standard deviations.
    assert all(abs(c - e) <= 5 * math.sqrt(e) for c, e in zip(per_second, expected))
    assert per_second[0] < per_second[4] < per_second[9]


def test_deterministic_ramp_integrates_exactly():
    times = times_until(arrivals.ramp(100.0, 10.0, 0.0, None), 10.0 + 1e-9)
    assert len(times) == 500  # area under the ramp: 100 * 10 / 2


def test_steps_follow_each_level():
    times = times_until(arrivals.steps(200.0, [(5.0, 0.5), (5.0, 2.0), (5.0, 1.0)], Random(8)), 20.0)
    c = counts(times, 20.0, 5.0)
    for got, want in zip(c, [500, 2000, 1000, 1000]):  # the last level holds
        assert abs(got - want) <= 5 * math.sqrt(want)


def test_steps_resume_at_start_s():
    gen = arrivals.steps(100.0, [(5.0, 0.0), (5.0, 1.0)], None, start_s=2.0)
    assert next(gen) == pytest.approx(3.0 + 0.01)  # silent until 5 s, then every 10 ms


def test_replay_plays_gaps_scaled_and_loops():
    gaps = [0.1, 0.2, 0.3]
    assert take(arrivals.replay(gaps, speed=2.0), 6).tolist() == pytest.approx([0.05, 0.1, 0.15] * 2)
    assert list(arrivals.replay(gaps, loop=False)) == pytest.approx(gaps)


def test_replay_starts_inside_the_trace():
    got = take(arrivals.replay([1.0, 1.0, 1.0], start_s=1.5), 3).tolist()
    assert got == pytest.approx([0.5, 1.0, 1.0])


@pytest.mark.parametrize("make", [lambda: arrivals.constant(0), lambda: arrivals.replay([])])
def test_invalid_parameters_are_refused(make):
    with pytest.raises(ValueError):
        next(iter(make()))
