"""Build experiments from window figures, and compare two side by side with the metric catalog's directions."""
from __future__ import annotations

import dataclasses

from app.experiments.store import Experiment
from app.figures import ALL, WindowFigures
from app.metrics.catalog import fmt, label, metric

SERVER_KEYS = ("infer_rps", "avg_batch", "queue_us", "compute_input_us", "compute_infer_us", "compute_output_us",
               "request_us", "pending", "fail_rps")
CLIENT_KEYS = ("throughput_rps", "goodput_rps", "p50_ms", "p99_ms", "rejected", "wrong_output")
_SERVER_EXTRA = ("infer_count", "request_count", "exec_count", "fail_count", "batch_hist", "span", "resets")


def capture(label_text: str, model: str, config_text: str, spec, figures: WindowFigures) -> Experiment:
    """Return an experiment from one window: client figures per class, server counter differences."""
    server = {k: figures.server.get(k) for k in (*SERVER_KEYS, *_SERVER_EXTRA)}
    return Experiment(label_text, model, config_text, figures.t0, figures.t1, dataclasses.asdict(spec),
                      dict(figures.client), server)


def compare(a: Experiment, b: Experiment) -> list[dict]:
    """Return rows metric | A | B | change | better, client metrics first (they are the authority for p99)."""
    ca, cb = a.client.get(ALL, {}), b.client.get(ALL, {})
    rows = [_row(key, ca.get(key), cb.get(key)) for key in CLIENT_KEYS]
    rows += [_row(key, a.server.get(key), b.server.get(key)) for key in SERVER_KEYS]
    return rows


def _row(key: str, a, b) -> dict:
    lower_is_better = metric(key).lower_is_better
    change = (b - a) / a if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else None
    better = "—"
    if change is not None and lower_is_better is not None and abs(change) >= 0.02:
        better = "B" if (change < 0) == lower_is_better else "A"
    return {"metric": label(key), "A": fmt(key, a, unit=False), "B": fmt(key, b, unit=False),
            "change": None if change is None else f"{change:+.0%}", "better": better}
