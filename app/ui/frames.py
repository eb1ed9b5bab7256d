"""Turn timeline rows (metrics poller, load generator, markers) into long-form DataFrames for charts."""
from __future__ import annotations

import time

import pandas as pd

from app.markers import Marker
from app.metrics.catalog import label, shown


def _time(t: float) -> pd.Timestamp:
    return pd.Timestamp(t, unit="s", tz="UTC")


def series(rows: list[dict], keys: tuple[str, ...], prefix: str = "", gap_s: float = 2.5) -> pd.DataFrame:
    """Return a long frame (time, series, value, n) of catalog figures, labelled and scaled by the catalog.

    A missing reading, or a stretch longer than gap_s without rows (idle, server down, between runs),
    becomes an empty value, so the line breaks there instead of bridging the gap.
    """
    records = []
    last: dict[str, float] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        for key in keys:
            name = prefix + label(key, with_unit=False)
            if name in last and r["t"] - last[name] > gap_s:
                records.append({"time": _time(last[name] + 1.0), "series": name, "value": None, "n": None})
            last[name] = r["t"]
            records.append({"time": _time(r["t"]), "series": name, "value": shown(key, r.get(key)),
                            "n": r.get("latency_n")})
    return pd.DataFrame(records, columns=["time", "series", "value", "n"])


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


def markers_frame(markers: list[Marker], now: float | None = None) -> pd.DataFrame:
    """Return a frame of markers with their stable ids; a band runs from t to end (or now while under way)."""
    now = time.time() if now is None else now
    return pd.DataFrame(
        [{"time": _time(m.t), "end": _time(m.end if m.end is not None else now) if m.band else None,
          "n": str(m.id), "label": m.text, "kind": m.kind} for m in markers],
        columns=["time", "end", "n", "label", "kind"],
    )


def batch_frame(hist: dict[int, int]) -> pd.DataFrame:
    """Return a frame of executions per batch size."""
    total = sum(hist.values()) or 1
    return pd.DataFrame(
        [{"batch size": int(b), "executions": n, "share": n / total} for b, n in sorted(hist.items()) if n],
        columns=["batch size", "executions", "share"],
    )
