"""Diagnose a window of a model — the one way every screen does it (the Diagnosis panel, /demo's sentence, a guided
scenario's phases): its figures and settings summarized as Symptoms, then the diagnosis's one rule."""
from __future__ import annotations

from dataclasses import dataclass

from app.lab.ports import StudyLab
from app.config.settings import ModelSettings
from app.diagnosis.patterns import Finding, Symptoms, diagnose
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures
from loadgen.stats import ALL


SPAN_S = 20  # the Diagnosis panel's window: long enough for a p99 and for a queue trend


@dataclass(frozen=True)
class Diagnosed:
    """A window's figures, what they amount to, and what the rule finds in them."""

    figures: Figures
    symptoms: Symptoms
    findings: list[Finding]


def diagnose_figures(figures: Figures, settings: ModelSettings) -> Diagnosed:
    """Return the diagnosis of a window already measured."""
    symptoms = window_from(figures, settings)
    return Diagnosed(figures, symptoms, diagnose(symptoms))


def diagnose_model(lab: StudyLab, model: str, t0: float, t1: float, settings: ModelSettings) -> Diagnosed:
    """Return the diagnosis of a model over [t0, t1): answers a reload held are left out, as on every screen."""
    return diagnose_figures(lab.measure(model, t0, t1, include_held=False), settings)


def window_from(figures: Figures, settings: ModelSettings) -> Symptoms:
    """Summarize a window of one model for diagnose(): the same figures the tiles show."""
    dyn = settings.dynamic_batching
    groups = settings.instance_groups
    client, server = figures.row(), figures.server
    failed, ended = figures.failures()
    latest = figures.latest_error()
    return Symptoms(
        p50_ms=figures.get("p50_ms"), p99_ms=figures.get("p99_ms"), latency_n=figures.samples(),
        queue_us=figures.get("queue_us"), compute_us=figures.get("compute_us"), request_us=figures.get("request_us"),
        avg_batch=figures.get("avg_batch"), infer_rps=figures.get("infer_rps"),
        offered_rps=_offered(client) if ALL in figures.client else None,
        pending_trend=server.pending_trend or 0.0, pending=figures.get("pending"),
        rejected=int(client.rejected), requests=int(client.requests), attempts=int(client.sent),
        failed=failed, ended=ended, errors_by_kind=dict(client.errors_by_kind),
        error_text=latest["latest"] if latest else "", server_failed=_server_failed(server),
        per_item_us_by_batch=dict(server.per_item_us_by_batch or {}),
        max_batch_size=settings.max_batch_size, dynamic_batching=dyn is not None,
        max_queue_delay_us=dyn.max_queue_delay_microseconds if dyn else 0,
        preferred_sizes=dyn.preferred_batch_sizes if dyn else (),
        instances=sum(g.count for g in groups) if groups else 1,
        seconds=figures.seconds,
    )


def _offered(client: ClientFigures) -> float | None:
    """Return the offered rate: what was sent, or what the open-loop schedule asks for when that is more."""
    sent, target = client.offered_rps, client.target_rps
    return max(sent or 0.0, target) if target else sent


def _server_failed(server: ServerFigures) -> float | None:
    """Return the server's failed-request count of the window; None when no scrape interval was measured in it."""
    return server.fail_count if server.intervals else None
