"""Open-loop schedules: arrival streams merged into one time-ordered list of due times."""
from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, replace
from random import Random

from loadgen import arrivals
from loadgen.rate_trace.trace_load import trace_gaps
from loadgen.spec import ArrivalKind, ArrivalSpec
from loadgen.trace import mean_rate, read_trace


def arrival_gaps(spec: ArrivalSpec, rate: float, rng: Random, start_s: float = 0.0,
                 trace: list[float] | None = None) -> Iterator[float]:
    """Return the gap generator of an arrival spec at a rate, from start_s into its time line."""
    inner = rng if spec.process == "poisson" else None
    match spec.kind:
        case ArrivalKind.CONSTANT:
            return arrivals.constant(rate)
        case ArrivalKind.POISSON:
            return arrivals.poisson(rate, rng)
        case ArrivalKind.BURSTY:
            return arrivals.on_off(rate, spec.on_s, spec.off_s, inner, start_s)
        case ArrivalKind.MMPP:
            return arrivals.mmpp(rate, spec.ratio, spec.high_s, spec.low_s, rng)
        case ArrivalKind.RAMP:
            return arrivals.ramp(rate, spec.ramp_s, spec.start_fraction, inner, start_s)
        case ArrivalKind.STEP:
            return arrivals.steps(rate, spec.steps, inner, start_s)
        case ArrivalKind.RATE_TRACE:
            return trace_gaps(spec, rate, rng, start_s)
    gaps = trace if trace is not None else read_trace(spec.trace, spec.trace_format)
    return arrivals.replay(gaps, spec.speed, spec.loop, start_s * spec.speed)


@dataclass
class Stream:
    """One arrival stream of a schedule: its process, rate and the generator in use."""

    key: object
    spec: ArrivalSpec
    rate: float
    rng: Random
    gaps: Iterator[float] | None = None
    trace: list[float] | None = None

    def restart(self, now_s: float) -> float | None:
        """Rebuild the generator from now_s; return the next due time (None when exhausted)."""
        if self.spec.kind is ArrivalKind.TRACE and self.trace is None:
            self.trace = read_trace(self.spec.trace, self.spec.trace_format)
        self.gaps = arrival_gaps(self.spec, self.rate, self.rng, now_s, self.trace)
        return self.next_due(now_s)

    def next_due(self, after_s: float) -> float | None:
        """Return the arrival following after_s, or None when the stream has ended."""
        gap = next(self.gaps, None)
        return None if gap is None else after_s + gap


class Schedule:
    """Merge streams; pop (due_s, key) in time order; change a stream's rate at any time."""

    def __init__(self, streams: list[Stream], start_s: float = 0.0) -> None:
        self.streams = {s.key: s for s in streams}
        self._heap: list[tuple[float, int, object]] = []
        self._order = {s.key: i for i, s in enumerate(streams)}
        for s in streams:
            self._push(s.key, s.restart(start_s) if s.rate > 0 else None)  # rate 0: paused

    def peek(self) -> float | None:
        """Return the next due time, or None when every stream has ended."""
        return self._heap[0][0] if self._heap else None

    def paused(self) -> bool:
        """Return True when some stream is stopped at rate 0 (and may be restarted)."""
        return any(s.rate <= 0 for s in self.streams.values())

    def pop(self) -> tuple[float, object]:
        """Remove and return the next (due_s, key), scheduling that stream's following arrival."""
        due, _, key = heapq.heappop(self._heap)
        self._push(key, self.streams[key].next_due(due))
        return due, key

    def set_rate(self, key: object, rate: float, now_s: float) -> None:
        """Change a stream's rate from now_s on (its process restarts at its position in time)."""
        stream = self.streams[key]
        if stream.spec.kind is ArrivalKind.TRACE and rate > 0:  # a trace keeps its shape, played faster or slower
            stream.spec = replace(stream.spec, speed=rate / mean_rate(stream.trace))
        stream.rate = rate
        self._heap = [item for item in self._heap if item[2] != key]
        heapq.heapify(self._heap)
        self._push(key, stream.restart(now_s) if rate > 0 else None)

    def _push(self, key: object, due: float | None) -> None:
        if due is not None:
            heapq.heappush(self._heap, (due, self._order[key], key))
