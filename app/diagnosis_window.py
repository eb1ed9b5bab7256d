"""Build a diagnosis Window from the metrics and load snapshots and the model's settings."""
from __future__ import annotations

from statistics import fmean

from app.config.settings import ModelSettings
from app.diagnosis import Window


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return fmean(values) if values else None


def slope(rows: list[dict], key: str) -> float:
    """Return the least-squares slope of rows[key] over t (per second); 0 with fewer than 3 points."""
    points = [(r["t"], r[key]) for r in rows if r.get(key) is not None]
    if len(points) < 3:
        return 0.0
    mt, mv = fmean(p[0] for p in points), fmean(p[1] for p in points)
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - mv) for t, v in points) / var if var else 0.0


def window_from(metrics_rows: list[dict], load_rows: list[dict], per_item_us: dict[int, float],
                settings: ModelSettings) -> Window:
    """Summarize the last seconds of one model for diagnose()."""
    client = [r for r in load_rows if r.get("cls") == "all"]
    compute = [sum(r[k] for k in ("compute_input_us", "compute_infer_us", "compute_output_us"))
               for r in metrics_rows if all(r.get(k) is not None for k in ("compute_input_us", "compute_infer_us", "compute_output_us"))]
    dyn = settings.dynamic_batching
    groups = settings.instance_groups
    return Window(
        p50_ms=_mean(client, "p50_ms"), p99_ms=_mean(client, "p99_ms"),
        queue_us=_mean(metrics_rows, "queue_us"), compute_us=fmean(compute) if compute else None,
        request_us=_mean(metrics_rows, "request_us"), avg_batch=_mean(metrics_rows, "avg_batch"),
        infer_rps=_mean(metrics_rows, "infer_rps"),
        offered_rps=(sum(r.get("sent") or 0 for r in client) / len(client)) if client else None,
        pending_trend=slope(metrics_rows, "pending"), pending=_mean(metrics_rows, "pending"),
        rejected=sum(r.get("rejected") or 0 for r in client),
        requests=sum(r.get("requests") or 0 for r in client),
        attempts=sum(r.get("sent") or 0 for r in client),
        per_item_us_by_batch=dict(per_item_us),
        max_batch_size=settings.max_batch_size, dynamic_batching=dyn is not None,
        max_queue_delay_us=dyn.max_queue_delay_microseconds if dyn else 0,
        preferred_sizes=dyn.preferred_batch_sizes if dyn else (),
        instances=sum(g.count for g in groups) if groups else 1,
    )
