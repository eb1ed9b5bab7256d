"""Turn timeline rows (metrics poller, load generator, events) into long-form DataFrames for charts."""
from __future__ import annotations

import pandas as pd

from app.events import Event

BREAKDOWN = (
    ("queue_us", "queue + batching wait"),
    ("compute_input_us", "compute input"),
    ("compute_infer_us", "compute infer"),
    ("compute_output_us", "compute output"),
)


def _time(t: float) -> pd.Timestamp:
    return pd.Timestamp(t, unit="s", tz="UTC")


def series(rows: list[dict], columns: dict[str, str], scale: float = 1.0) -> pd.DataFrame:
    """Return a long frame (time, series, value) of the given row keys renamed to series labels."""
    records = [
        {"time": _time(r["t"]), "series": label, "value": r[key] * scale}
        for r in rows for key, label in columns.items() if r.get(key) is not None
    ]
    return pd.DataFrame(records, columns=["time", "series", "value"])


def client_totals(load_rows: list[dict], cls: str = "all") -> list[dict]:
    """Return the load generator's rows of one class ('all' sums every class when not present)."""
    rows = [r for r in load_rows if r.get("cls") == cls]
    if rows or cls != "all":
        return rows
    merged: dict[float, dict] = {}
    for r in load_rows:
        m = merged.setdefault(r["t"], {"t": r["t"], "throughput_rps": 0.0, "goodput_rps": 0.0})
        m["throughput_rps"] += r.get("throughput_rps") or 0.0
        m["goodput_rps"] += r.get("goodput_rps") or 0.0
    return sorted(merged.values(), key=lambda r: r["t"])


def events_frame(events: list[Event]) -> pd.DataFrame:
    """Return a frame of event markers, numbered as in the markers table (the full text is the tooltip)."""
    return pd.DataFrame(
        [{"time": _time(e.t), "n": str(i), "label": e.text, "kind": e.kind} for i, e in enumerate(events, 1)],
        columns=["time", "n", "label", "kind"],
    )


def batch_frame(hist: dict[int, int]) -> pd.DataFrame:
    """Return a frame of executions per batch size."""
    total = sum(hist.values()) or 1
    return pd.DataFrame(
        [{"batch size": int(b), "executions": n, "share": n / total} for b, n in sorted(hist.items()) if n],
        columns=["batch size", "executions", "share"],
    )
