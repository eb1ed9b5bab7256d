"""Exports of a study: every measurement window and every point as CSV, a point as a perf_analyzer command.

The CSV columns are metric keys (their unit is in the name: _ms, _rps, _us), client ones per traffic
class as `client.<class>.<key>`, server ones as `server.<key>`, in the metric catalog's order. Text cells that a
spreadsheet would take for a formula (starting with = + - @, a tab or a CR) get a leading ' so they stay text;
numbers stay numbers.
"""
from __future__ import annotations

import csv
import io
import math
import re
import shlex

from app.timeline.meter import MeasuredWindow
from app.experiments.sweep.space import CONCURRENCY, RATE
from app.store.database import Experiment
from app.experiments.sweep.sweeper import Point
from app.metrics.catalog import CLIENT_METRICS, SERVER_METRICS
from app.timeline.figures import Figures
from loadgen.stats import ALL

CLIENT_COLUMNS = (*(m.key for m in CLIENT_METRICS), "latency_n")
SERVER_COLUMNS = tuple(m.key for m in SERVER_METRICS)
INTERVAL_MS = 5000  # perf_analyzer's own default measurement window


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


def _csv(head: list[str], rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)  # lines end in CRLF (RFC 4180), so a CR inside a label is quoted, not a row break
    writer.writerow([_cell(h) for h in head])  # column names carry traffic class names, which people type
    writer.writerows([_cell(row.get(k)) for k in head] for row in rows)
    return out.getvalue()


def _cell(value):
    """Return a CSV cell: numbers as they are, nothing for None/inf/nan, text that a spreadsheet would run as a
    formula (labels and notes people typed) prefixed with ' so it stays text."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _figure_columns(rows: list[dict]) -> list[str]:
    """Return the figure columns any row has, clients per class ('all' first), then the server's."""
    have = {k for r in rows for k in r}
    classes = sorted({k[len("client."):].rsplit(".", 1)[0] for k in have if k.startswith("client.")},
                     key=lambda c: (c != ALL, c))
    return ([f"client.{c}.{k}" for c in classes for k in CLIENT_COLUMNS if f"client.{c}.{k}" in have]
            + [f"server.{k}" for k in SERVER_COLUMNS if f"server.{k}" in have])


def _figures(figures: Figures) -> dict:
    """Return flat figure cells: scalar client figures per class, scalar server figures, each where its stored form
    (to_dict) has it, so a column is there when some row has the figure."""
    out = {f"client.{c}.{k}": v for c, row in figures.client.items() for k, v in row.to_dict().items()
           if k in CLIENT_COLUMNS}
    out.update({f"server.{k}": v for k, v in figures.server.to_dict().items()
                if k in SERVER_COLUMNS and not isinstance(v, dict)})
    return out


def window_figures(data: dict) -> Figures:
    """Return a stored window's figures: from its own buckets and counter differences (meter.MeasuredWindow), or as
    stored by runs saved before windows kept their buckets."""
    if "client" in data:
        return Figures.from_dict(data)
    return MeasuredWindow.from_dict(data).figures()


def windows_csv(experiments: list[Experiment]) -> str:
    """Return one CSV row per measurement window of every run (a run without windows: one row of its totals).

    Trials are numbered from 1; server figures are each window's own counter differences.
    """
    rows = []
    for e in experiments:
        arm, _, trial = e.point.rpartition("#") if e.kind == "trial" else ("", "", "")
        ident = {"run_id": e.id, "kind": e.kind, "label": e.label, "point": e.point, "arm": arm,
                 "trial": int(trial) + 1 if trial else "", "status": e.status}
        if not e.windows:
            seconds = e.ended_at - e.started_at if e.started_at is not None and e.ended_at is not None else None
            rows.append({**ident, "window": "", "t0": e.started_at, "t1": e.ended_at, "seconds": seconds,
                         "reset": "", **_figures(e.window())})
        for i, data in enumerate(e.windows):
            f = window_figures(data)
            rows.append({**ident, "window": i + 1, "t0": f.t0, "t1": f.t1, "seconds": f.seconds,
                         "reset": int(f.reset), **_figures(f)})
    head = ["run_id", "kind", "label", "point", "arm", "trial", "status", "window", "t0", "t1", "seconds", "reset"]
    return _csv(head + _figure_columns(rows), rows)


def points_csv(points: list[Point]) -> str:
    """Return one CSV row per sweep point: configuration, load, whether it settled, merged figures."""
    rows = [{"point": p.key, "config": p.choice.key, "configuration": p.choice.label, "load": p.load,
             "status": p.status, "stable": int(p.stable), "change": p.change, "t0": p.t0, "t1": p.t1,
             "windows": len(p.windows), "note": p.note,
             **_figures(p.figures)} for p in points]
    head = ["point", "config", "configuration", "load", "status", "stable", "change", "t0", "t1", "windows", "note"]
    return _csv(head + _figure_columns(rows), rows)


def perf_analyzer_command(endpoint_host_port: str, model: str, load_kind: str, load: float,
                          p99_budget_ms: float | None, protocol: str = "http") -> list[str]:
    """Return the perf_analyzer argv that measures one sweep point: same load, p99 as its percentile, the budget.

    An open-loop point uses Poisson arrivals, as the lab's open loop does by default; the budget becomes
    --latency-threshold in whole ms (rounded up: perf_analyzer reads an integer).
    """
    if protocol not in ("http", "grpc"):
        raise ValueError(f"protocol must be 'http' or 'grpc', got {protocol!r}")
    argv = ["perf_analyzer", "-m", model, "-u", endpoint_host_port, "-i", protocol]
    if load_kind == CONCURRENCY:
        argv += ["--concurrency-range", str(int(load))]
    elif load_kind == RATE:
        argv += ["--request-rate-range", f"{load:g}", "--request-distribution", "poisson"]
    else:
        raise ValueError(f"load_kind must be {CONCURRENCY!r} or {RATE!r}, got {load_kind!r}")
    argv += ["--percentile=99", "--measurement-interval", str(INTERVAL_MS)]
    if p99_budget_ms is not None:
        argv += ["--latency-threshold", str(math.ceil(p99_budget_ms))]
    return argv


def shell_line(argv: list[str]) -> str:
    """Return argv quoted as one shell line, for people to copy (never run here)."""
    return shlex.join(argv)


def config_file_name(point: Point) -> str:
    """Return a file name for a point's config.pbtxt, e.g. 'config-i2-d2000.pbtxt'."""
    return f"config-{re.sub(r'[^A-Za-z0-9_.-]', '_', point.choice.key)}.pbtxt"
