"""A request-rate trace as a load: the arrival stream of a rate_trace ArrivalSpec, and a LoadSpec that plays a trace
once. The stream's rate is the played mean rate: scale = rate / the trace's mean (rate = mean plays it as recorded),
so changing the rate of a running trace keeps its shape."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from random import Random

from loadgen.rate_trace.rate_trace import RateTrace, check_playback, curve, playback
from loadgen.rate_trace.source import trace_of
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode

__all__ = ["PROCESS_MODES", "is_trace", "played_curve", "played_s", "scale_for", "trace_gaps", "trace_load", "trace_of"]

PROCESS_MODES = {"poisson": "poisson", "constant": "uniform"}  # ArrivalSpec.process → playback's mode


def scale_for(trace: RateTrace, rate: float) -> float:
    """Return the rate multiplier that plays the trace's mean at rate."""
    return rate / trace.mean


def trace_gaps(arrival: ArrivalSpec, rate: float, rng: Random, start_s: float = 0.0) -> Iterator[float]:
    """Yield the gaps between arrivals of the trace played at mean rate, from start_s into the playback on (a
    restart at a new rate continues at the same place of the trace); the stream ends with the trace."""
    trace = trace_of(arrival)
    scale = scale_for(trace, rate)
    check_playback(trace, arrival.compress, scale, PROCESS_MODES[arrival.process])
    offsets = playback(trace, arrival.compress, scale, rng.randrange(2**31), PROCESS_MODES[arrival.process])
    last = start_s
    for t in offsets:
        if t >= start_s:
            yield t - last
            last = t


def played_s(arrival: ArrivalSpec) -> float:
    """Return how long one playback of the arrival's trace lasts (s)."""
    return trace_of(arrival).duration_s / arrival.compress


def played_curve(arrival: ArrivalSpec, rate: float) -> list[tuple[float, float]]:
    """Return the played rate as (seconds from the start, req/s) steps: what the live charts draw under the
    measured rate."""
    trace = trace_of(arrival)
    return curve(trace, arrival.compress, scale_for(trace, rate))


def trace_load(base: LoadSpec, rate_trace: str, compress: float = 1.0, scale: float = 1.0,
               process: str = "poisson", trace_class: str | None = None) -> LoadSpec:
    """Return base as an open-loop load that plays the trace once: rate = the trace's mean × scale, duration = the
    played span (a request's answer may come up to drain_s later)."""
    arrival = ArrivalSpec(kind=ArrivalKind.RATE_TRACE, rate_trace=rate_trace, compress=compress, process=process,
                          trace_class=trace_class)
    trace = trace_of(arrival)
    check_playback(trace, compress, scale, PROCESS_MODES[process])
    return dataclasses.replace(base, mode=Mode.OPEN, arrival=arrival, rate=round(trace.mean * scale, 6),
                               duration_s=played_s(arrival), max_requests=None)


def is_trace(spec: LoadSpec | None) -> bool:
    """Return True when the load's shared stream plays a rate trace."""
    return spec is not None and spec.mode == Mode.OPEN and spec.arrival.kind is ArrivalKind.RATE_TRACE
