"""Rows of a recorded rate trace put on one grid: the part the file and Prometheus readers share."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

from loadgen.rate_trace.rate_trace import RateTrace, TraceError, check_class_count, check_span


@dataclass(frozen=True)
class Row:
    """One recorded rate at one time, and where it was read (file:line, or file: JSON path) for errors."""

    t: float
    rate: float
    name: str | None  # its class; None when the trace has no classes
    where: str



def assemble(rows: list[Row], source: str) -> RateTrace:
    """Put rows on one grid of their smallest spacing; a missing step holds the last rate (0 before a class's
    first row)."""
    if not rows:
        raise TraceError(f"{source}: no rows: a trace needs rates at two or more times")
    series: dict[str | None, list[Row]] = {}
    for row in rows:
        earlier = series.setdefault(row.name, [])
        if earlier and row.t <= earlier[-1].t:
            kind = f" of class {row.name!r}" if row.name is not None else ""
            raise TraceError(f"{row.where}: t={row.t:g} is not after the previous row{kind} (t={earlier[-1].t:g}): "
                             "sort the rows by time, each time once" + (" per class" if kind else ""))
        earlier.append(row)
    check_class_count(len(series), source)
    times = sorted({r.t for r in rows})
    if len(times) < 2:
        raise TraceError(f"{source}: one time only: a trace needs rates at two or more times to know its step")
    t0, step = times[0], min(b - a for a, b in zip(times, times[1:]))
    steps = round((times[-1] - t0) / step) + 1
    check_span(steps, step, source)  # before the grid is allocated
    for r in rows:
        k = (r.t - t0) / step
        if abs(k - round(k)) > 1e-3:
            raise TraceError(f"{r.where}: t={r.t:g} is off the {step:g} s spacing the rows start with at "
                             f"t={t0:g}: give rows at one regular spacing (resample first)")
    filled = {name: _hold(rs, t0, step, steps) for name, rs in series.items()}
    if None in filled:
        return RateTrace(filled[None], step, source=source)
    return RateTrace(tuple(map(sum, zip(*filled.values()))), step, classes=filled, source=source)


def seconds(value, where: str) -> float:
    """Return a time as unix seconds: a number, a numeric text, an ISO-8601 text (naive = UTC) or a datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        moment = float(value)
    else:
        text = str(value).strip()
        try:
            moment = float(text)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                raise TraceError(f"{where}: time {value!r} is neither seconds nor ISO-8601: write e.g. 3600 or "
                                 "2024-05-01T13:00:00Z") from None
    if isinstance(moment, datetime):
        moment = (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
    if not math.isfinite(moment):
        raise TraceError(f"{where}: time {value!r} is not a finite number of seconds")
    return moment


def _hold(rows: list[Row], t0: float, step: float, steps: int) -> tuple[float, ...]:
    out = [0.0] * steps
    starts = [round((r.t - t0) / step) for r in rows]
    for row, start, end in zip(rows, starts, starts[1:] + [steps]):
        out[start:end] = [row.rate] * (end - start)
    return tuple(out)
