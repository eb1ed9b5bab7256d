"""A rate trace on a wall-clock time line: what it asks in a window (the generator-behind rule, the status table), its
played curve from the run's start (the live charts), and its description (the traffic form)."""
from __future__ import annotations

from loadgen.rate_trace.rate_trace import TraceError, check_playback, describe, span_text
from loadgen.rate_trace.trace_load import PROCESS_MODES, played_curve, scale_for, trace_of
from loadgen.spec import ArrivalKind, ArrivalSpec


def is_rate_trace(arrival: ArrivalSpec | None) -> bool:
    """Return True when an arrival process plays a rate trace."""
    return arrival is not None and arrival.kind is ArrivalKind.RATE_TRACE


def played_points(arrival: ArrivalSpec, rate: float, started_at: float, since: float | None = None,
                  until: float | None = None) -> list[tuple[float, float]]:
    """Return the played rate as (epoch s, req/s) step points from the run's start, cut to [since, until]: the
    step in force at since starts the line, until (or the trace's end) ends it."""
    points = [(started_at + t, r) for t, r in played_curve(arrival, rate)]
    lo = points[0][0] if since is None else max(since, points[0][0])
    hi = points[-1][0] if until is None else min(until, points[-1][0])
    if hi <= lo:
        return []
    inside = [(t, r) for t, r in points[:-1] if lo < t < hi]
    first = next(r for t, r in reversed(points[:-1]) if t <= lo)
    last = inside[-1][1] if inside else first
    return [(lo, first), *inside, (hi, last)]


def asked_rate(arrival: ArrivalSpec, rate: float, started_at: float, t0: float, t1: float) -> float | None:
    """Return the mean rate (req/s) the trace asked over the part of [t0, t1) it played; None when it played none
    of it (the window is before its start or after its end)."""
    points = played_points(arrival, rate, started_at, t0, t1)
    if len(points) < 2:
        return None
    area = sum(r * (b - a) for (a, r), (b, _) in zip(points, points[1:]))
    return area / (points[-1][0] - points[0][0])


def trace_text(arrival: ArrivalSpec, rate: float) -> str:
    """Return what the form shows of a trace: its description, the played span and the played mean and peak; a
    TraceError says what is wrong."""
    trace = trace_of(arrival)
    scale = scale_for(trace, rate)
    check_playback(trace, arrival.compress, scale, PROCESS_MODES[arrival.process])
    played = trace.duration_s / arrival.compress
    return (f"{describe(trace)}. Played at compress {arrival.compress:g} × scale {scale:.3g}: {span_text(played)}, "
            f"mean {trace.mean * scale:,.1f} req/s, peak {trace.peak * scale:,.1f} req/s, about "
            f"{trace.mean * scale * played:,.0f} requests.")


def trace_classes(ref: str) -> tuple[str, ...]:
    """Return the classes a trace records (empty when it has none or cannot be read)."""
    try:
        return tuple(trace_of(ArrivalSpec(kind=ArrivalKind.RATE_TRACE, rate_trace=ref)).classes)
    except (TraceError, ValueError):
        return ()
