"""The trace a rate_trace arrival names: a shipped trace or a rate file (read once per file version), or one class
of it. Knows no LoadSpec (loadgen.spec's checks read a trace's peak through here)."""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from loadgen.rate_trace.rate_trace import RateTrace, TraceError
from loadgen.rate_trace.files import read_rate_file
from loadgen.rate_trace.shipped import NAMES, shipped_trace


def trace_of(arrival) -> RateTrace:
    """Return the trace a rate_trace arrival (an ArrivalSpec) plays (its class's rates when it names one)."""
    ref = arrival.rate_trace or ""
    if ref in NAMES:
        trace = _shipped(ref)
    else:
        path = Path(ref).expanduser()
        try:
            stamp = os.stat(path).st_mtime_ns
        except OSError as exc:
            raise TraceError(f"rate_trace {ref!r}: {exc.strerror or exc}: give a shipped trace's name "
                             f"({', '.join(NAMES)}) or the path of a rate file") from None
        trace = _file(str(path.resolve()), stamp)
    if arrival.trace_class is None:
        if trace.mean <= 0:
            raise TraceError(f"{trace.source or ref}: every rate is 0: a trace to play needs some traffic")
        return trace
    if arrival.trace_class not in trace.classes:
        known = ", ".join(trace.classes) or "none"
        raise TraceError(f"rate_trace {ref!r} has no class {arrival.trace_class!r} (its classes: {known})")
    rates = trace.classes[arrival.trace_class]
    if not any(rates):
        raise TraceError(f"{trace.source or ref}: class {arrival.trace_class!r} has no traffic")
    return RateTrace(rates, trace.step_s, source=f"{trace.source} [{arrival.trace_class}]")


@lru_cache(maxsize=8)
def _shipped(name: str) -> RateTrace:
    return shipped_trace(name)


@lru_cache(maxsize=16)
def _file(path: str, stamp: int) -> RateTrace:  # stamp: a rewritten file is read again
    return read_rate_file(path)
