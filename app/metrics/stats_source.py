"""Figures without /metrics: the statistics API's totals under /metrics' counter names, so every window works.

A server whose metrics port is off or unreachable still answers `GET /v2/models/stats` on its HTTP port. Its
totals are cumulative like the counters (durations in ns instead of µs), but restart from zero at every reload of
a model; `deltas.counter_deltas` takes a decrease of any counter as that restart, as it does for an unload/load on
/metrics. What the statistics API does not have stays empty: the pending-queue gauge, failures by reason (all
failures count under UNKNOWN), the latency summaries (server p50-p99) and CPU/GPU utilization.
"""
from __future__ import annotations

from app.metrics.scrape import Scrape, ModelValues
from app.metrics.statistics_api import ModelStats

METRICS, STATISTICS = "metrics", "statistics API"
MISSING = (
    "pending queue",
    "failures by reason (counted, not why)",
    "latency summaries (server p50–p99)",
    "CPU/GPU utilization",
)
FAILED = "UNKNOWN"  # the reason label /metrics would carry; the statistics API counts failures without one

_DURATIONS_NS = {  # /metrics counter (µs) -> inference_stats entry (ns)
    "nv_inference_request_duration_us": "success",
    "nv_inference_queue_duration_us": "queue",
    "nv_inference_compute_input_duration_us": "compute_input",
    "nv_inference_compute_infer_duration_us": "compute_infer",
    "nv_inference_compute_output_duration_us": "compute_output",
}


def model_values(stats: ModelStats) -> ModelValues:
    """Return one model's statistics as the counters /metrics would show (successes, inferences, executions, µs)."""
    counters = {
        "nv_inference_request_success": float(stats.counts.get("success", 0)),
        "nv_inference_count": float(stats.inference_count),
        "nv_inference_exec_count": float(stats.execution_count),
    }
    counters.update({name: stats.ns.get(part, 0) / 1000.0 for name, part in _DURATIONS_NS.items()})
    return ModelValues(counters=counters, failures={FAILED: float(stats.counts.get("fail", 0))})


def stats_scrape(stats: dict[str, ModelStats], t: float) -> Scrape:
    """Return a Scrape at time t built from one read of the statistics API (no gauges, no summaries)."""
    return Scrape(t=t, models={name: model_values(s) for name, s in stats.items()})
