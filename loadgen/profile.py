"""Piecewise-linear rate profiles and the arrivals they generate by a change of time."""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from random import Random


@dataclass(frozen=True)
class Segment:
    """The rate moves linearly from rate0 to rate1 between start_s and end_s."""

    start_s: float
    end_s: float
    rate0: float
    rate1: float

    def rate_at(self, t: float) -> float:
        """Return the rate at time t inside the segment."""
        span = self.end_s - self.start_s
        return self.rate0 if span <= 0 else self.rate0 + (self.rate1 - self.rate0) * (t - self.start_s) / span

    def area(self, t: float) -> float:
        """Return the expected arrivals between t and the segment's end."""
        return (self.rate_at(t) + self.rate1) * (self.end_s - t) / 2


@dataclass(frozen=True)
class RateProfile:
    """Rate over time: segments from 0, then repeating (period_s) or holding tail_rate."""

    segments: tuple[Segment, ...]
    period_s: float | None = None
    tail_rate: float = 0.0

    def advance(self, t: float, area: float) -> float:
        """Return the time at which `area` expected arrivals have accumulated after t."""
        base = 0.0
        if self.period_s:
            base = math.floor(t / self.period_s) * self.period_s
            t -= base
        while True:
            for seg in self.segments:
                if t >= seg.end_s:
                    continue
                t = max(t, seg.start_s)
                have = seg.area(t)
                if have >= area and have > 0:
                    return base + t + _solve(seg, t, area)
                area -= have
                t = seg.end_s
            if not self.period_s:
                return t + area / self.tail_rate if self.tail_rate > 0 else math.inf
            if sum(s.area(s.start_s) for s in self.segments) <= 0:
                return math.inf
            base, t = base + self.period_s, 0.0


def _solve(seg: Segment, t: float, area: float) -> float:
    """Return dx with integral of the segment's rate over [t, t+dx] equal to area."""
    r = seg.rate_at(t)
    slope = (seg.rate1 - seg.rate0) / (seg.end_s - seg.start_s)
    disc = r * r + 2 * slope * area
    if slope == 0:
        return area / r
    # Stable root of slope/2*dx^2 + r*dx - area = 0.
    return 2 * area / (r + math.sqrt(max(disc, 0.0)))


def profile_gaps(profile: RateProfile, rng: Random | None = None, start_s: float = 0.0) -> Iterator[float]:
    """Yield gaps of a Poisson process with the profile's rate (evenly spaced when rng is None)."""
    last = t = start_s
    while True:
        t = profile.advance(t, rng.expovariate(1.0) if rng is not None else 1.0)
        if math.isinf(t):
            return
        yield t - last
        last = t
