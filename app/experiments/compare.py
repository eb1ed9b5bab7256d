"""Build experiments from snapshots, and compare two side by side with the metric catalog's directions."""
from __future__ import annotations

import dataclasses
from statistics import fmean

from app.experiments.store import Experiment
from app.metrics.catalog import BY_KEY

SERVER_KEYS = ("infer_rps", "avg_batch", "queue_us", "compute_input_us", "compute_infer_us", "compute_output_us",
               "request_us", "pending", "fail_rps")
CLIENT_KEYS = (("throughput_rps", "client throughput (req/s)", False), ("goodput_rps", "goodput (req/s)", False),
               ("p50_ms", "client p50 (ms)", True), ("p99_ms", "client p99 (ms)", True),
               ("rejected", "rejected", True), ("wrong_output", "wrong outputs", True))


def server_means(rows: list[dict]) -> dict:
    """Return the mean of each server metric over timeline rows (None when never measured)."""
    out = {}
    for key in SERVER_KEYS:
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        out[key] = fmean(values) if values else None
    return out


def capture(label: str, model: str, config_text: str, load_snapshot, metrics_rows: list[dict]) -> Experiment:
    """Return an experiment from the current load snapshot and the server rows of the same span."""
    spec = dataclasses.asdict(load_snapshot.spec) if load_snapshot.spec is not None else {}
    start = load_snapshot.started_at
    rows = [r for r in metrics_rows if start is None or r["t"] >= start]
    end = start + load_snapshot.elapsed_s if start is not None else None
    return Experiment(label, model, config_text, start, end, spec, dict(load_snapshot.summary), server_means(rows))


def compare(a: Experiment, b: Experiment) -> list[dict]:
    """Return rows metric | A | B | change | better, client metrics first (they are the authority for p99)."""
    rows = []
    ca, cb = a.client.get("all", {}), b.client.get("all", {})
    for key, label, lower in CLIENT_KEYS:
        rows.append(_row(label, ca.get(key), cb.get(key), lower))
    for key in SERVER_KEYS:
        meta = BY_KEY.get(key)
        label = f"server {meta.label} ({meta.unit})" if meta else key
        rows.append(_row(label, a.server.get(key), b.server.get(key), meta.lower_is_better if meta else None))
    return rows


def _row(label: str, a, b, lower_is_better) -> dict:
    change = (b - a) / a if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else None
    better = "—"
    if change is not None and lower_is_better is not None and abs(change) >= 0.02:
        better = "B" if (change < 0) == lower_is_better else "A"
    return {"metric": label, "A": a, "B": b, "change": None if change is None else f"{change:+.0%}", "better": better}
