"""What the twin's clients send: an open-loop schedule or a closed loop, split into priority classes."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from random import Random

import numpy as np


class Arrivals(str, Enum):
    """Where arrival times come from."""

    POISSON = "poisson"
    BURSTY = "bursty"  # two-state Markov-modulated Poisson: bursts at ratio × the quiet rate
    TRACE = "trace"  # Poisson at a piecewise-constant rate given as (t_s, rate) steps
    TIMES = "times"  # the arrival times given
    CLOSED = "closed"  # concurrency clients, each sending its next request when its answer is back


@dataclass(frozen=True)
class ClassShare:
    """A share of the traffic sent at one priority (0 = the model's default level)."""

    name: str = "all"
    share: float = 1.0
    priority: int = 0


@dataclass(frozen=True)
class Load:
    """What the clients send for duration_s; only the fields of its kind matter."""

    kind: Arrivals
    duration_s: float
    rate_rps: float = 0.0
    concurrency: int = 0
    steps: tuple[tuple[float, float], ...] = ()
    times: tuple[float, ...] = ()
    burst_ratio: float = 8.0
    burst_s: float = 0.2
    quiet_s: float = 1.0
    classes: tuple[ClassShare, ...] = (ClassShare(),)
    warmup_s: float = 0.0  # arrivals before it warm the queue up and are left out of every figure
    overhead_cv: float = 0.5  # closed loop: how much the client's time between answer and next request varies

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Arrivals(self.kind))
        if not self.duration_s > self.warmup_s >= 0:
            raise ValueError(f"duration_s {self.duration_s} must exceed warmup_s {self.warmup_s} >= 0")
        if not self.classes or any(c.share < 0 for c in self.classes) or not sum(c.share for c in self.classes) > 0:
            raise ValueError("classes need non-negative shares that add up to more than 0")
        if self.overhead_cv < 0:
            raise ValueError(f"overhead_cv is {self.overhead_cv}; a spread cannot be negative")

    @classmethod
    def poisson(cls, rate_rps: float, duration_s: float, **more) -> Load:
        """Poisson arrivals at a fixed rate."""
        return cls(Arrivals.POISSON, duration_s, rate_rps=_positive(rate_rps), **more)

    @classmethod
    def bursty(cls, rate_rps: float, duration_s: float, ratio: float = 8.0, burst_s: float = 0.2,
               quiet_s: float = 1.0, **more) -> Load:
        """Bursts at ratio × the quiet rate, with mean rate rate_rps; states last exponential times."""
        return cls(Arrivals.BURSTY, duration_s, rate_rps=_positive(rate_rps), burst_ratio=ratio, burst_s=burst_s,
                   quiet_s=quiet_s, **more)

    @classmethod
    def trace(cls, steps, duration_s: float, **more) -> Load:
        """Poisson arrivals at a rate that steps: (t_s, rate) from t_s on."""
        steps = tuple(sorted((float(t), float(r)) for t, r in steps))
        if not steps or any(r < 0 for _, r in steps):
            raise ValueError("a rate trace needs at least one (t_s, rate) step and no negative rate")
        return cls(Arrivals.TRACE, duration_s, steps=steps, **more)

    @classmethod
    def replay(cls, times, duration_s: float | None = None, **more) -> Load:
        """The arrival times given (seconds from the start)."""
        times = tuple(sorted(float(t) for t in times))
        return cls(Arrivals.TIMES, duration_s or (times[-1] if times else 0.0) + 1e-9, times=times, **more)

    @classmethod
    def closed(cls, concurrency: int, duration_s: float, **more) -> Load:
        """Closed loop: concurrency clients, each with one request in flight."""
        if concurrency < 1:
            raise ValueError(f"a closed loop needs at least one client, got {concurrency}")
        return cls(Arrivals.CLOSED, duration_s, concurrency=concurrency, **more)

    def with_classes(self, *classes: ClassShare) -> Load:
        """Return the load split into these classes by share."""
        return replace(self, classes=tuple(classes))

    def clients(self) -> list[int]:
        """Return the closed loop's clients per class (largest remainders, so they add up)."""
        total = sum(c.share for c in self.classes)
        exact = [self.concurrency * c.share / total for c in self.classes]
        out = [math.floor(x) for x in exact]
        for i in sorted(range(len(exact)), key=lambda i: out[i] - exact[i])[:self.concurrency - sum(out)]:
            out[i] += 1
        return out


def _positive(rate: float) -> float:
    if not rate > 0:
        raise ValueError(f"a rate must be positive, got {rate}")
    return float(rate)


def _pieces(load: Load, gen: np.random.Generator) -> list[tuple[float, float, float]]:
    """Return (start, end, rate) intervals of constant rate that cover the load's duration."""
    end = load.duration_s
    if load.kind == Arrivals.POISSON:
        return [(0.0, end, load.rate_rps)]
    if load.kind == Arrivals.TRACE:
        bounds = [t for t, _ in load.steps] + [end]
        return [(max(0.0, a), min(b, end), r) for (a, r), b in zip(load.steps, bounds[1:]) if min(b, end) > max(a, 0)]
    # Bursty: the quiet rate follows from the mean rate, ratio and mean dwell times.
    high, low, ratio = load.burst_s, load.quiet_s, load.burst_ratio
    quiet = load.rate_rps * (high + low) / (ratio * high + low)
    out, t, burst = [], 0.0, gen.random() < high / (high + low)
    while t < end:
        dwell = gen.exponential(high if burst else low)
        out.append((t, min(end, t + dwell), quiet * ratio if burst else quiet))
        t, burst = t + dwell, not burst
    return out


def arrivals(load: Load, rng: Random) -> tuple[np.ndarray, np.ndarray]:
    """Return sorted arrival times (s) and each arrival's class index for an open-loop load."""
    gen = np.random.default_rng(rng.getrandbits(63))
    if load.kind == Arrivals.CLOSED:
        raise ValueError("a closed loop has no schedule: its arrivals follow its answers")
    if load.kind == Arrivals.TIMES:
        times = np.asarray([t for t in load.times if t < load.duration_s], dtype=float)
    else:
        pieces = _pieces(load, gen)
        # Given its count, a Poisson process's arrivals in an interval are uniform: exact and vectorised.
        counts = gen.poisson([max(0.0, (b - a) * r) for a, b, r in pieces]) if pieces else np.zeros(0, int)
        starts = np.repeat([a for a, _, _ in pieces], counts)
        spans = np.repeat([b - a for a, b, _ in pieces], counts)
        times = np.sort(starts + gen.random(int(counts.sum())) * spans)
    shares = np.asarray([c.share for c in load.classes], dtype=float)
    classes = gen.choice(len(shares), size=len(times), p=shares / shares.sum()) if len(shares) > 1 \
        else np.zeros(len(times), dtype=int)
    return times, classes
