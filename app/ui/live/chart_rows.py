"""Turn timeline rows (metrics poller, load generator, markers) into the records the charts draw."""
from __future__ import annotations

import time

from app.timeline.markers import Marker
from app.metrics.catalog import label, shown
from loadgen.stats import ALL


def _ms(t: float) -> float:
    return t * 1000.0  # Vega-Lite reads numbers on a temporal axis as epoch milliseconds


def series(rows: list[dict], keys: tuple[str, ...], prefix: str = "", gap_s: float = 2.5) -> list[dict]:
    """Return records (time, series, value, n) of catalog figures, labelled and scaled by the catalog.

    A missing reading, or a stretch longer than gap_s without rows (idle, server down, between runs),
    becomes an empty value, so the line breaks there instead of bridging the gap.
    """
    records = []
    last: dict[str, float] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        for key in keys:
            name = prefix + label(key, with_unit=False)
            if name in last and r["t"] - last[name] > gap_s:
                records.append({"time": _ms(last[name] + 1.0), "series": name, "value": None, "n": None})
            last[name] = r["t"]
            records.append({"time": _ms(r["t"]), "series": name, "value": shown(key, r.get(key)),
                            "n": r.get("latency_n")})
    return records


def client_totals(load_rows: list[dict], cls: str = ALL) -> list[dict]:
    """Return the load generator's rows of one class ('all' sums every class when not present)."""
    rows = [r for r in load_rows if r.get("cls") == cls]
    if rows or cls != ALL:
        return rows
    merged: dict[float, dict] = {}
    for r in load_rows:
        m = merged.setdefault(r["t"], {"t": r["t"], "throughput_rps": 0.0, "goodput_rps": 0.0})
        m["throughput_rps"] += r.get("throughput_rps") or 0.0
        m["goodput_rps"] += r.get("goodput_rps") or 0.0
    return sorted(merged.values(), key=lambda r: r["t"])


def marker_records(markers: list[Marker]) -> list[dict]:
    """Return one record per marker, numbered by its stable id (the full text is the tooltip)."""
    return [{"time": _ms(m.t), "n": str(m.id), "label": m.text, "kind": m.kind} for m in markers]


def band_records(markers: list[Marker], now: float | None = None) -> list[dict]:
    """Return the reload/restart bands, from asked to serving again (or now while under way)."""
    now = time.time() if now is None else now
    return [{"time": _ms(m.t), "end": _ms(m.end if m.end is not None else now), "label": m.text}
            for m in markers if m.band]


def batch_records(hist: dict[int, int]) -> list[dict]:
    """Return executions per batch size."""
    total = sum(hist.values()) or 1
    return [{"batch size": int(b), "executions": n, "share": n / total} for b, n in sorted(hist.items()) if n]
