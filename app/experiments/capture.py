"""Build saved runs from window figures, and show two side by side (changes only: a verdict needs an A/B)."""
from __future__ import annotations

import dataclasses
import math
import time

from app.lab.ports import StudyLab
from app.store.database import Experiment
from app.timeline.figures import Figures
from app.metrics.catalog import fmt, label

SERVER_KEYS = ("infer_rps", "avg_batch", "queue_share", "queue_us", "compute_input_us", "compute_infer_us",
               "compute_output_us", "request_us", "pending", "fail_rps")
CLIENT_KEYS = ("throughput_rps", "goodput_rps", "p50_ms", "p99_ms", "rejected", "wrong_output")
_SERVER_EXTRA = ("infer_count", "request_count", "exec_count", "fail_count", "batch_hist", "span", "resets")


def capture(label_text: str, model: str, config_text: str, spec, figures: Figures,
            windows: list[dict] = (), reloads: list = (), since: str = "") -> Experiment:
    """Return an experiment from one window: client figures per class, server counter differences, its
    measurement windows (meter.MeasuredWindow.to_dict: buckets with latencies, counter differences) and the reload
    bands left out."""
    server = {k: figures.server.get(k) for k in (*SERVER_KEYS, *_SERVER_EXTRA)}
    outcome = {"window": "since the last config change" + (f" ({since})" if since else "") + ", to the run's end",
               "seconds": figures.seconds}
    return Experiment(label_text, model, config_text, figures.t0, figures.t1, dataclasses.asdict(spec),
                      figures.client_dicts(), server, seed=spec.seed, windows=list(windows), reloads=list(reloads),
                      outcome=outcome)


def save_run(lab: StudyLab, label: str, now: float | None = None) -> Experiment:
    """Store the lab's current (or last) traffic run since the model's last config change, and return it."""
    snap = lab.traffic_snapshot(window_s=0)
    if snap.spec is None or snap.started_at is None:
        raise ValueError("no traffic has run yet: start traffic, then save it as an experiment")
    model = snap.spec.model
    now = time.time() if now is None else now
    change = lab.last_change(model)
    start = max(snap.started_at + snap.spec.warmup_s, change.settled + 1.0 if change else 0.0)
    end = min(now, snap.started_at + snap.elapsed_s)
    if end - start < 2.0:
        raise ValueError("less than 2 s of traffic since the last config change: let it run, then save")
    figures = lab.measure(model, start, end, include_held=False)
    reloads = [[m.t, m.end] for m in lab.markers(model, since=snap.started_at) if m.band and m.end is not None
               and m.t < end]
    exp = capture(label.strip() or f"{model} run", model, lab.served_text(model), snap.spec, figures,
                  _seconds(lab, model, snap.started_at, start, end), reloads, since=change.text if change else "")
    return lab.run(lab.add_run(exp))


def _seconds(lab: StudyLab, model: str, run_start: float, t0: float, t1: float) -> list[dict]:
    """Return the run's seconds inside [t0, t1) as measurement windows: client buckets (with every latency)
    and the counter differences of the polls that ended in each second."""
    first, last = run_start + math.ceil(t0 - run_start), run_start + math.floor(t1 - run_start)
    return [w.to_dict() for w in lab.recorded_windows(model, first, last)]


def compare(a: Experiment, b: Experiment) -> list[dict]:
    """Return rows metric | A | B | change, client metrics first (they are the authority for p99); no verdict. A run
    read from a damaged row shows '—' where a figure cannot be read, never raises."""
    fa, fb = a.window(), b.window()
    return [_row(key, fa.get(key), fb.get(key)) for key in (*CLIENT_KEYS, *SERVER_KEYS)]


def _number(value) -> float | None:
    """Return a finite number, else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


def _row(key: str, a, b) -> dict:
    """One metric of two single runs: the change, and no winner — one run each says nothing about the noise."""
    a, b = _number(a), _number(b)
    change = (b - a) / a if a is not None and b is not None and a else None
    return {"metric": label(key), "A": fmt(key, a, unit=False), "B": fmt(key, b, unit=False),
            "change": None if change is None else f"{change:+.0%}"}
