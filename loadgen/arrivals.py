"""Arrival processes: pure generators of gaps (seconds) between arrivals, randomness injected."""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from random import Random

from loadgen.profile import RateProfile, Segment, profile_gaps


def constant(rate: float) -> Iterator[float]:
    """Yield evenly spaced gaps: rate arrivals per second."""
    _positive(rate)
    return itertools.repeat(1.0 / rate)


def poisson(rate: float, rng: Random) -> Iterator[float]:
    """Yield exponential gaps: a Poisson process of the given rate."""
    _positive(rate)
    while True:
        yield rng.expovariate(rate)


def on_off(rate: float, on_s: float, off_s: float, rng: Random | None, start_s: float = 0.0) -> Iterator[float]:
    """Yield Poisson bursts during on_s, silence during off_s; rate is the mean over a cycle."""
    _positive(rate)
    peak = rate * (on_s + off_s) / on_s
    segments = (Segment(0.0, on_s, peak, peak), Segment(on_s, on_s + off_s, 0.0, 0.0))
    return profile_gaps(RateProfile(segments, period_s=on_s + off_s), rng, start_s)


def mmpp(rate: float, ratio: float, high_s: float, low_s: float, rng: Random) -> Iterator[float]:
    """Yield a two-state Markov-modulated Poisson process with mean rate `rate`."""
    # The high state's rate is `ratio` times the low state's; each state lasts an exponential
    # time with mean high_s or low_s, so the mean rate fixes the low state's rate.
    _positive(rate)
    low = rate * (high_s + low_s) / (ratio * high_s + low_s)
    rates, dwell = (ratio * low, low), (high_s, low_s)
    state = 0 if rng.random() < high_s / (high_s + low_s) else 1
    left, carried = rng.expovariate(1.0 / dwell[state]), 0.0
    while True:
        gap = rng.expovariate(rates[state]) if rates[state] > 0 else float("inf")
        if gap < left:  # memoryless: a fresh gap after every switch is exact
            left -= gap
            yield carried + gap
            carried = 0.0
        else:
            carried += left
            state = 1 - state
            left = rng.expovariate(1.0 / dwell[state])


def ramp(rate: float, ramp_s: float, start_fraction: float, rng: Random | None, start_s: float = 0.0) -> Iterator[float]:
    """Yield arrivals whose rate grows linearly from start_fraction*rate to rate over ramp_s, then holds."""
    _positive(rate)
    segments = (Segment(0.0, ramp_s, rate * start_fraction, rate),)
    return profile_gaps(RateProfile(segments, tail_rate=rate), rng, start_s)


def steps(rate: float, levels: Sequence[tuple[float, float]], rng: Random | None, start_s: float = 0.0) -> Iterator[float]:
    """Yield arrivals at rate*level for each (duration_s, level); the last level holds."""
    _positive(rate)
    if not levels:
        raise ValueError("a step schedule needs at least one (duration_s, level) pair")
    segments, t = [], 0.0
    for duration, level in levels:
        segments.append(Segment(t, t + duration, rate * level, rate * level))
        t += duration
    return profile_gaps(RateProfile(tuple(segments), tail_rate=rate * levels[-1][1]), rng, start_s)


def replay(gaps: Sequence[float], speed: float = 1.0, loop: bool = True, start_s: float = 0.0) -> Iterator[float]:
    """Yield the recorded gaps divided by speed, from start_s into the trace, looping when asked."""
    _positive(speed)
    if not gaps:
        raise ValueError("the trace holds no arrivals")
    scaled = [g / speed for g in gaps]
    period = sum(scaled)
    if loop and period <= 0:
        raise ValueError("a looping trace must span some time")
    cycle = itertools.cycle(scaled) if loop else iter(scaled)
    skip = start_s % period if loop else start_s
    t = 0.0
    for gap in cycle:
        t += gap
        if t >= skip:
            yield t - skip
            break
    yield from cycle


def _positive(value: float) -> None:
    if not value > 0:
        raise ValueError(f"a rate must be positive, got {value}")
