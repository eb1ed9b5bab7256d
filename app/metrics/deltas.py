"""One timeline row per scrape interval: counter differences robust to the reset a model reload causes."""
from __future__ import annotations

from app.metrics.catalog import ROW_KEYS
from app.metrics.scrape import ModelValues, Scrape
from app.metrics.window import CounterDelta, server_figures

_QUANTILES = {
    "p50_us": ("nv_inference_request_summary_us", 0.5),
    "p90_us": ("nv_inference_request_summary_us", 0.9),
    "p95_us": ("nv_inference_request_summary_us", 0.95),
    "p99_us": ("nv_inference_request_summary_us", 0.99),
    "queue_p99_us": ("nv_inference_queue_summary_us", 0.99),
    "compute_infer_p99_us": ("nv_inference_compute_infer_summary_us", 0.99),
}


def counter_delta(prev: float | None, cur: float, reset: bool = False) -> float:
    """Return the increase of a counter; after a reset (or a decrease) the new value is the increase."""
    if prev is None or reset or cur < prev:
        return cur
    return cur - prev


def counter_deltas(prev: ModelValues | None, cur: ModelValues) -> tuple[dict[str, float], dict[str, float], bool]:
    """Return (counter deltas, failure deltas by reason, reset) for one model.

    The latency and count counters restart together on an unload/load, so a decrease in any of
    them resets all; failure counters are judged one reason at a time (in 2.51 they survive it).
    """
    before = prev.counters if prev else {}
    reset = prev is not None and any(v < before.get(k, 0.0) for k, v in cur.counters.items())
    counters = {k: counter_delta(before.get(k), v, reset) for k, v in cur.counters.items()}
    fails_before = prev.failures if prev else {}
    failures = {k: counter_delta(fails_before.get(k), v) for k, v in cur.failures.items()}
    return counters, failures, reset


def empty_row(t: float, up: bool = True, error: str | None = None) -> dict:
    """Return a timeline row with every column present and no value (a gap in the charts)."""
    row = dict.fromkeys(ROW_KEYS)
    row.update(t=t, up=up, error=error, reset=False)
    return row


def model_row(prev: Scrape | None, cur: Scrape, model: str) -> dict:
    """Return one timeline row for a model: rates over prev..cur plus cur's gauges and quantiles."""
    row = empty_row(cur.t)
    row.update(cpu_util=cur.cpu_util, gpu_util=cur.gpu_util, gpu_mem_bytes=cur.gpu_mem_bytes,
               gpu_mem_total_bytes=cur.gpu_mem_total_bytes)
    values = cur.models.get(model)
    if values is None:
        row["error"] = f"model {model!r} is not in /metrics (not loaded?)"
        return row
    row["pending"] = values.pending
    row.update({key: values.quantile(*where) for key, where in _QUANTILES.items()})
    dt = cur.t - prev.t if prev is not None else 0.0
    if dt <= 0:
        return row
    # A model missing from the previous scrape was just loaded: its counters started at zero.
    counters, failures, reset = counter_deltas(prev.models.get(model, ModelValues()), values)
    delta = CounterDelta(dt, counters, failures)
    row.update(server_figures(delta), interval_s=dt, reset=reset, delta=delta)
    return row
