"""Build the diagnosis Symptoms from one model's window figures and its settings."""
from __future__ import annotations

from app.config.settings import ModelSettings
from app.diagnosis import Symptoms
from app.figures import WindowFigures
from loadgen.stats import ALL


def window_from(figures: WindowFigures, settings: ModelSettings) -> Symptoms:
    """Summarize a window of one model for diagnose(): the same figures the tiles show."""
    dyn = settings.dynamic_batching
    groups = settings.instance_groups
    client = figures.client.get(ALL) or {}
    failed, ended = figures.failures()
    latest = figures.latest_error()
    return Symptoms(
        p50_ms=figures.get("p50_ms"), p99_ms=figures.get("p99_ms"), latency_n=figures.samples(),
        queue_us=figures.get("queue_us"), compute_us=figures.get("compute_us"), request_us=figures.get("request_us"),
        avg_batch=figures.get("avg_batch"), infer_rps=figures.get("infer_rps"),
        offered_rps=_offered(client),
        pending_trend=figures.server.get("pending_trend") or 0.0, pending=figures.get("pending"),
        rejected=int(client.get("rejected") or 0), requests=int(client.get("requests") or 0),
        attempts=int(client.get("sent") or 0),
        failed=failed, ended=ended, errors_by_kind=dict(client.get("errors_by_kind") or {}),
        error_text=latest["latest"] if latest else "", server_failed=_server_failed(figures.server),
        per_item_us_by_batch=dict(figures.server.get("per_item_us_by_batch") or {}),
        max_batch_size=settings.max_batch_size, dynamic_batching=dyn is not None,
        max_queue_delay_us=dyn.max_queue_delay_microseconds if dyn else 0,
        preferred_sizes=dyn.preferred_batch_sizes if dyn else (),
        instances=sum(g.count for g in groups) if groups else 1,
        seconds=figures.seconds,
    )


def _offered(client: dict) -> float | None:
    """Return the offered rate: what was sent, or what the open-loop schedule asks for when that is more."""
    if not client:
        return None
    sent, target = client.get("offered_rps"), client.get("target_rps")
    return max(sent or 0.0, target) if target else sent


def _server_failed(server: dict) -> float | None:
    """Return the server's failed-request count of the window; None when no scrape interval was measured in it."""
    return server.get("fail_count") if server.get("intervals") else None
