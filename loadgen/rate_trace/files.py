"""Read request-rate traces from files: CSV or JSON of rates, arrival times, perf_analyzer request intervals."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from loadgen.rate_trace.rate_trace import RateTrace, TraceError, check_span, rate_value
from loadgen.rate_trace.prometheus_range import trace_from_prometheus
from loadgen.rate_trace.grid import Row, assemble, seconds
from loadgen.trace import read_trace


def read_rate_file(path: str | Path) -> RateTrace:
    """Read a trace by its suffix: .csv rates, .json rates or Prometheus's answer, else perf_analyzer intervals."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return read_rate_csv(path)
    return read_rate_json(path) if suffix == ".json" else from_trace_file(path)


def read_rate_csv(path: str | Path) -> RateTrace:
    """Read a CSV with header t,rate (one series) or t,rate,class (a row per class and time); '#' lines skipped.
    t: seconds or ISO-8601 (naive = UTC); rows sorted by t; a missing step holds the last rate."""
    lines = [(n, line) for n, line in enumerate(_text(path).splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise TraceError(f"{path}: empty: write a header t,rate then one row per time, e.g. 0,120")
    n, first = lines[0]
    header = [h.strip().lower() for h in next(csv.reader([first]))]
    if header not in (["t", "rate"], ["t", "rate", "class"]):
        raise TraceError(f"{path}:{n}: header {first.strip()!r}: the first line must be t,rate or t,rate,class")
    rows = []
    for n, line in lines[1:]:
        cells = [c.strip() for c in next(csv.reader([line]))]
        where = f"{path}:{n}"
        if len(cells) != len(header):
            raise TraceError(f"{where}: {len(cells)} values in a row; write {len(header)}: {','.join(header)}")
        name = cells[2] if len(cells) == 3 else None
        if name == "":
            raise TraceError(f"{where}: the class is empty: name the class of every row")
        rows.append(Row(seconds(cells[0], where), rate_value(cells[1], where), name, where))
    return assemble(rows, str(path))


def read_rate_json(path: str | Path) -> RateTrace:
    """Read a JSON list of {"t": ..., "rate": ..., "class"?: ...} or Prometheus's query_range answer (a matrix)."""
    try:
        data = json.loads(_text(path))
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}:{exc.lineno}: not JSON ({exc.msg}): write a list of {{\"t\": 0, \"rate\": 120}} "
                         "or save Prometheus's query_range answer as it came") from None
    if isinstance(data, dict) and "status" in data:
        return trace_from_prometheus(data, str(path))
    if not isinstance(data, list):
        raise TraceError(f"{path}: a JSON {type(data).__name__} without a Prometheus status: write a list of "
                         "{\"t\": 0, \"rate\": 120} items, or Prometheus's query_range answer as it came")
    rows = []
    for i, item in enumerate(data):
        where = f"{path}: item [{i}]"
        if not isinstance(item, dict) or "t" not in item or "rate" not in item:
            raise TraceError(f"{where}: {item!r}: each item is an object with t and rate (and class, optionally)")
        name = item.get("class")
        rows.append(Row(seconds(item["t"], where), rate_value(item["rate"], where),
                        None if name is None else str(name), where))
    if len({r.name is None for r in rows}) > 1:
        raise TraceError(f"{path}: some items have a class and some not: give every item a class, or none")
    return assemble(rows, str(path))


def from_timestamps(times: list[float], step_s: float = 1.0, source: str = "arrival times",
                    start: float | None = None) -> RateTrace:
    """Return the rates of sorted arrival times (seconds): arrivals counted per step_s from start (default: the
    first arrival), ÷ step_s."""
    if not (isinstance(step_s, (int, float)) and math.isfinite(step_s) and step_s > 0):
        raise TraceError(f"{source}: step_s = {step_s!r}: the counting step must be positive seconds, e.g. 1")
    if not times:
        raise TraceError(f"{source}: no arrivals: give at least one arrival time")
    for i, t in enumerate(times):
        if not (isinstance(t, (int, float)) and math.isfinite(t)):
            raise TraceError(f"{source}: arrival [{i}] = {t!r}: times are finite seconds")
        if i and t < times[i - 1]:
            raise TraceError(f"{source}: arrival [{i}] at {t:g} s comes before arrival [{i - 1}] at "
                             f"{times[i - 1]:g} s: sort the times")
    origin = times[0] if start is None else start
    if origin > times[0]:
        raise TraceError(f"{source}: start {origin:g} s is after the first arrival ({times[0]:g} s)")
    steps = int((times[-1] - origin) // step_s) + 1
    check_span(steps, step_s, source)
    counts = [0] * steps
    for t in times:
        counts[min(int((t - origin) // step_s), steps - 1)] += 1
    for i, c in enumerate(counts):
        rate_value(c / step_s, f"{source}: step [{i}]")
    return RateTrace(tuple(c / step_s for c in counts), float(step_s), source=source)


def from_trace_file(path: str | Path, fmt: str = "intervals_us", step_s: float = 1.0) -> RateTrace:
    """Return the rates of a perf_analyzer request-intervals file (or another loadgen.trace format) per step_s,
    counted from the run's start (the first interval is the wait before the first request)."""
    t, times = 0.0, []
    for gap in read_trace(path, fmt):
        t += gap
        times.append(t)
    return from_timestamps(times, step_s, str(path), start=0.0)


def write_rate_csv(trace: RateTrace, path: str | Path) -> None:
    """Write the trace as CSV t,rate (t,rate,class with classes), t in seconds from 0; read_rate_csv reads it back."""
    lines = ["t,rate,class" if trace.classes else "t,rate"]
    for i, rate in enumerate(trace.rates):
        t = i * trace.step_s
        t_text = str(int(t)) if t == int(t) else repr(t)
        lines += ([f"{t_text},{r[i]!r},{name}" for name, r in trace.classes.items()] if trace.classes
                  else [f"{t_text},{rate!r}"])
    Path(path).write_text("\n".join(lines) + "\n")


def _text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read the trace ({exc.__class__.__name__}): check the path") from None
