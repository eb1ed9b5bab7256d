"""Playing a rate trace: Poisson or uniform arrivals per step, compressed and scaled, deterministic for a seed, refused
past the limits table; the played rate curve and the trace's description. Randomness from seeds, no clock."""
from __future__ import annotations

import math
import statistics

import pytest

from loadgen.rate_trace.rate_trace import RateTrace, TraceError, curve, describe, playback, rate_at


def refused(call, *args, **kwargs) -> str:
    """Return the TraceError message of a call that must be refused."""
    with pytest.raises(TraceError) as info:
        call(*args, **kwargs)
    return str(info.value)


# --- playback ---------------------------------------------------------------------------------------------------

def counts_per_step(offsets: list[float], step: float, steps: int) -> list[int]:
    counts = [0] * steps
    for t in offsets:
        counts[int(t // step)] += 1
    return counts


def test_poisson_playback_has_each_steps_rate_and_poisson_spread():
    trace = RateTrace((40.0,) * 2000, 1.0)
    offsets = playback(trace, compress=4, scale=1, seed=3)
    counts = counts_per_step(offsets, 0.25, 2000)
    mean, var = statistics.fmean(counts), statistics.pvariance(counts)
    # Expected 40 req/s × 0.25 s = 10 a step. The mean of 2000 Poisson(10) counts has sd sqrt(10/2000) = 0.071:
    # 5 sd is 0.35. Their variance/mean is 1 for Poisson (0 for even spacing) with sd ≈ sqrt(2/2000) = 0.032.
    assert abs(mean - 10) < 5 * math.sqrt(10 / 2000), f"mean count a step {mean}"
    assert abs(var / mean - 1) < 5 * math.sqrt(2 / 2000), f"variance/mean {var / mean}"
    # Memoryless inside each step: the wait from a step's start to its first arrival is exponential, mean and sd
    # 1/40 s (P(no arrival in a step) = e^-10 is negligible); the mean of 2000 has sd 0.025/sqrt(2000), and
    # their sd/mean (1 for the exponential, 0 for a fixed first gap) has sd about 0.03.
    firsts = {}
    for t in offsets:
        firsts.setdefault(int(t // 0.25), t % 0.25)
    waits = list(firsts.values())
    assert abs(statistics.fmean(waits) - 0.025) < 5 * 0.025 / math.sqrt(len(waits)), statistics.fmean(waits)
    assert 0.85 < statistics.pstdev(waits) / statistics.fmean(waits) < 1.15, statistics.pstdev(waits)


def test_playback_honours_compress_scale_and_each_steps_own_rate():
    trace = RateTrace((20.0,) * 1000 + (80.0,) * 1000, 1.0)
    offsets = playback(trace, compress=2, scale=1.5, seed=5)
    assert offsets == sorted(offsets) and 0 <= offsets[0] and offsets[-1] < 1000, (offsets[0], offsets[-1])
    low, high = sum(t < 500 for t in offsets), sum(t >= 500 for t in offsets)
    # Each half plays 500 s: 20 × 1.5 = 30 req/s → 15,000 expected, 80 × 1.5 = 120 → 60,000; Poisson sd = sqrt.
    for measured, expected in ((low, 15_000), (high, 60_000)):
        assert abs(measured - expected) < 5 * math.sqrt(expected), f"{measured} arrivals, expected {expected}"


def test_playback_is_deterministic_for_a_seed():
    trace = RateTrace((5.0, 50.0, 0.0, 20.0), 2.0)
    assert playback(trace, 1, 1, seed=11) == playback(trace, 1, 1, seed=11)
    assert playback(trace, 1, 1, seed=11) != playback(trace, 1, 1, seed=12)
    assert not [t for t in playback(trace, 1, 1, seed=11) if 4 <= t < 6], "a step at rate 0 sent requests"


def test_uniform_playback_gives_exact_counts_evenly_spaced():
    trace = RateTrace((10.0, 30.0, 0.0, 20.0), 1.0)
    for compress, scale in ((1, 1), (2, 2)):  # a step of 0.5 s at twice the rate holds as many arrivals
        step = 1.0 / compress
        offsets = playback(trace, compress, scale, mode="uniform")
        assert counts_per_step(offsets, step, 4) == [10, 30, 0, 20], (compress, scale, offsets)
        second = [t for t in offsets if step <= t < 2 * step]
        gaps = {round(b - a, 12) for a, b in zip(second, second[1:])}
        assert gaps == {round(step / 30, 12)}, gaps


def test_uniform_playback_carries_fractions_across_steps():
    trace = RateTrace((2.5,) * 8, 1.0)  # 2.5 a step: 20 in all, never 16 or 24 from rounding each step
    counts = counts_per_step(playback(trace, mode="uniform"), 1.0, 8)
    assert sum(counts) == 20 and set(counts) == {2, 3}, counts


@pytest.mark.parametrize("kwargs, words", [
    ({"compress": 0}, "compress = 0"),
    ({"compress": 2000}, "compress = 2000"),
    ({"scale": 0}, "scale = 0"),
    ({"scale": -1}, "scale = -1"),
    ({"mode": "bursty"}, "poisson or uniform"),
    ({"compress": 1}, "use compress 24 or more"),
    ({"compress": 24, "scale": 100}, "use scale 50 or less"),
    ({"compress": 24, "scale": 40}, "raise compress to 34.6 or lower scale to 27.8"),
])
def test_playback_refuses_what_the_limits_table_refuses(kwargs, words):
    trace = RateTrace((100.0,) * 1440, 60.0)  # a day at 100 req/s
    message = refused(playback, trace, **{"compress": 144, **kwargs})
    assert words in message, message


def test_rate_at_and_curve_follow_the_played_steps():
    trace = RateTrace((10.0, 30.0, 20.0), 60.0)
    played = [rate_at(trace, t, compress=60, scale=2) for t in (-0.1, 0.0, 0.99, 1.0, 2.5, 3.0)]
    assert played == [0.0, 20.0, 20.0, 60.0, 40.0, 0.0], played
    assert curve(trace, 60, 2) == [(0.0, 20.0), (1.0, 60.0), (2.0, 40.0), (3.0, 40.0)]


def test_describe_says_span_step_range_and_mean():
    trace = RateTrace((40.0,) * 720 + (580.0,) * 719 + (900.0,), 60.0)
    assert describe(trace) == "24 h at 1 min steps, 40–900 req/s, mean 310 req/s", describe(trace)
    assert describe(RateTrace((0.5, 2.0), 10.0)) == "20 s at 10 s steps, 0.5–2 req/s, mean 1.2 req/s"


def test_a_trace_refuses_bad_rates_by_index():
    message = refused(RateTrace, (1.0, float("nan")), 1.0, source="made")
    assert "made: rates[1]" in message, message
    assert "class 'a' has 1 steps" in refused(RateTrace, (1.0, 2.0), 1.0, classes={"a": (1.0,)})
