"""A forecast for the autopilot: the request rate it expects in the next seconds, so it adds instances before a
crowd arrives instead of after (predictive scaling, as cloud autoscalers do from yesterday's traffic).

A reactive controller pays for every onset: it sees the crowd in the first window that holds it, decides, and
Triton adds the instance only after the requests queued before the reload have run (docs/MEASUREMENTS.md#autopilot).
With a forecast — a rate curve aligned to the wall clock: the trace the traffic plays, or a recorded day — it sizes
the instance count for the highest rate expected within lead_s, and gives instances back when the rate expected
for longer than the hysteresis needs fewer.

Forecast is the impure part (a curve and a clock); what it says at one moment is an Outlook, the plain value the
pure decision core (app.autopilot.pilot) reads and a study records, so a replay decides the same.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

LEAD_S = 3.0  # look this far ahead: a decision period, a window's worth of evidence, and the reload (~0.1-0.6 s)
SMOOTH_S = 1.0  # the forecast rate is the mean over this span: a burst shorter than it queues, it needs no instance
STEP_S = 0.1  # resolution of the look-ahead


class ForecastError(ValueError):
    """A forecast that cannot work; the message says the fix."""


@dataclass(frozen=True)
class Outlook:
    """What the forecast says at one moment: the highest SMOOTH_S-mean rate within lead_s (soon_rps: when to add),
    within cover_s (cover_rps: how many to add — the rate until a next change can follow, a dwell later), and within
    later_s (later_rps, what a step down must still carry), and the rate one instance carries within the SLA when
    one was given (instance_rps; None: the autopilot uses the most one instance has carried so far under the SLA)."""

    soon_rps: float
    lead_s: float
    later_rps: float
    later_s: float
    instance_rps: float | None = None
    source: str = "forecast"
    cover_rps: float | None = None  # None: soon_rps (no dwell given)
    cover_s: float | None = None

    def to_dict(self) -> dict:
        """Return the outlook as a study records it."""
        return {"soon_rps": self.soon_rps, "lead_s": self.lead_s, "later_rps": self.later_rps,
                "later_s": self.later_s, "instance_rps": self.instance_rps, "source": self.source,
                "cover_rps": self.cover_rps, "cover_s": self.cover_s}

    @classmethod
    def from_dict(cls, data: dict | None) -> Outlook | None:
        """Return the outlook a study recorded (None when the window had none)."""
        if not data:
            return None
        number = lambda key: None if data.get(key) is None else float(data[key])  # noqa: E731
        return cls(float(data["soon_rps"]), float(data["lead_s"]), float(data["later_rps"]), float(data["later_s"]),
                   number("instance_rps"), str(data.get("source", "forecast")), number("cover_rps"),
                   number("cover_s"))


@dataclass(frozen=True)
class Forecast:
    """A rate curve the autopilot expects: (seconds from its start, req/s) steps, each held until the next point
    (the last point ends the curve), with the look-ahead and, optionally, the requests/s one instance carries within
    the SLA (a sweep's operating point)."""

    curve: tuple[tuple[float, float], ...]
    lead_s: float = LEAD_S
    instance_rps: float | None = None  # what one instance carries within the SLA; None: learned live
    source: str = "forecast"

    def __post_init__(self) -> None:
        points = tuple((float(t), float(r)) for t, r in self.curve)
        if len(points) < 2 or any(not (math.isfinite(t) and math.isfinite(r)) or r < 0 for t, r in points):
            raise ForecastError("a forecast needs two or more (t, req/s) points with finite, non-negative rates")
        if any(b[0] <= a[0] for a, b in zip(points, points[1:])):
            raise ForecastError("a forecast's times must increase")
        object.__setattr__(self, "curve", points)
        object.__setattr__(self, "_times", tuple(t for t, _ in points))
        if not (math.isfinite(self.lead_s) and 0 < self.lead_s <= 600):
            raise ForecastError(f"lead_s {self.lead_s!r}: look ahead 0–600 s (e.g. {LEAD_S:g})")
        if self.instance_rps is not None and not (math.isfinite(self.instance_rps) and self.instance_rps > 0):
            raise ForecastError(f"instance_rps {self.instance_rps!r}: give the requests/s one instance carries "
                                "(a sweep's or a probe's), or none to learn it live")

    @classmethod
    def of_trace(cls, trace, compress: float = 1.0, scale: float = 1.0, **kwargs) -> Forecast:
        """Return the forecast of a RateTrace played compressed and scaled (loadgen.rate_trace.rate_trace.curve)."""
        from loadgen.rate_trace.rate_trace import curve  # noqa: PLC0415 - loadgen is below app; only this needs it

        return cls(tuple(curve(trace, compress, scale)), **kwargs)

    @property
    def span_s(self) -> float:
        """Return how long the curve lasts (s)."""
        return self.curve[-1][0] - self.curve[0][0]

    def rate_at(self, t: float) -> float:
        """Return the curve's rate at t seconds from its start (0 outside it)."""
        i = bisect.bisect_right(self._times, t) - 1
        return self.curve[i][1] if 0 <= i < len(self.curve) - 1 else 0.0

    def peak(self, t0: float, t1: float) -> float:
        """Return the highest SMOOTH_S-mean rate of spans starting in [t0, t1] (s from the curve's start)."""
        best, t = 0.0, t0
        while t <= t1 + 1e-9:
            best = max(best, self._mean(t, t + SMOOTH_S))
            t += STEP_S
        return best

    def outlook(self, elapsed: float, later_s: float, dwell_s: float = 0.0) -> Outlook | None:
        """Return what the forecast says elapsed seconds into the curve (None past its end: it knows nothing).
        dwell_s: how long after a change the next may follow — an add covers the rate until then too."""
        if elapsed > self.span_s:
            return None
        cover = self.lead_s + dwell_s
        later = max(later_s, cover)
        return Outlook(self.peak(elapsed, elapsed + self.lead_s), self.lead_s, self.peak(elapsed, elapsed + later),
                       later, self.instance_rps, self.source, self.peak(elapsed, elapsed + cover), cover)

    def _mean(self, t0: float, t1: float) -> float:
        """Return the curve's mean rate over [t0, t1] (the area of its steps ÷ the span)."""
        points = self.curve
        first = max(0, bisect.bisect_right(self._times, t0) - 1)
        last = bisect.bisect_left(self._times, t1) + 1
        area, points = 0.0, points[first:last + 1]
        for (a, rate), (b, _) in zip(points, points[1:]):
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo:
                area += rate * (hi - lo)
        return area / (t1 - t0)


@dataclass
class ForecastClock:
    """A forecast on the wall clock: start() says when its t = 0 was (None: not started yet, it says nothing)."""

    forecast: Forecast
    start: Callable[[], float | None]

    def outlook(self, now: float, later_s: float, dwell_s: float = 0.0) -> Outlook | None:
        """Return the outlook at wall-clock now (None before the start or after the curve's end)."""
        t0 = self.start()
        return None if t0 is None or now < t0 else self.forecast.outlook(now - t0, later_s, dwell_s)


def traffic_forecast(traffic, lead_s: float = LEAD_S, instance_rps: float | None = None) -> ForecastClock | None:
    """Return the forecast of the lab's running traffic when it plays a rate trace — the trace itself, aligned to
    the run's start — else None (a steady or bursty load has nothing ahead to know). traffic: the lab's traffic
    verb (a TrafficState now), asked again at every window: the forecast ends with the run it was made for."""
    from loadgen.rate_trace.trace_load import is_trace, played_curve  # noqa: PLC0415 - loadgen is below app

    now = traffic()
    spec = now.spec
    if not now.running or not is_trace(spec):
        return None
    run_start = now.started_at
    forecast = Forecast(tuple(played_curve(spec.arrival, spec.rate)), lead_s, instance_rps,
                        f"the trace the traffic plays ({spec.arrival.rate_trace})")
    return ForecastClock(forecast, lambda: run_start if traffic().started_at == run_start else None)
