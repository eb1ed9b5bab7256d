"""Parse Triton's Prometheus exposition text into one Scrape: a timestamp and per-model values."""
from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass, field

from app.metrics.exposition import samples

COUNTERS = (
    "nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count",
    "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
)
FAILURE = "nv_inference_request_failure"
PENDING = "nv_inference_pending_request_count"
SUMMARIES = (
    "nv_inference_request_summary_us", "nv_inference_queue_summary_us", "nv_inference_compute_input_summary_us",
    "nv_inference_compute_infer_summary_us", "nv_inference_compute_output_summary_us",
)
QUANTILES = (0.5, 0.9, 0.95, 0.99)
CPU = "nv_cpu_utilization"
_NAMES = frozenset((*COUNTERS, FAILURE, PENDING, *SUMMARIES, CPU))


def _read(name: str) -> bool:
    """The samples parse_metrics reads: the families above and the GPU gauges (a summary's _count and _sum not)."""
    return name in _NAMES or name.startswith("nv_gpu_")


@dataclass(frozen=True)
class ModelValues:
    """One model's values in one scrape, summed over its version labels."""

    counters: dict[str, float] = field(default_factory=dict)
    failures: dict[str, float] = field(default_factory=dict)
    pending: float | None = None
    quantiles: dict[tuple[str, float], float] = field(default_factory=dict)

    def quantile(self, summary: str, q: float) -> float | None:
        """Return a summary quantile in µs, or None when absent or NaN (no observation in the window)."""
        value = self.quantiles.get((summary, q))
        return None if value is None or math.isnan(value) else value


@dataclass(frozen=True)
class Scrape:
    """Everything one read of /metrics says, at time t (epoch seconds)."""

    t: float
    models: dict[str, ModelValues]
    cpu_util: float | None = None
    gpu_util: float | None = None
    gpu_mem_bytes: float | None = None
    gpu_mem_total_bytes: float | None = None


def fetch_text(url: str, timeout_s: float = 2.0) -> str:
    """Return the body of an HTTP GET, raising OSError (URLError, HTTPError) on failure."""
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return resp.read().decode("utf-8", errors="replace")


def parse_metrics(text: str, t: float) -> Scrape:
    """Parse exposition text taken at time t into a Scrape."""
    acc: dict[str, dict] = {}
    gpu: dict[str, list[float]] = {}
    cpu = None
    for name, labels, value in samples(text, _read):
        model = labels.get("model")
        if model is None:
            if name == CPU:
                cpu = value
            elif name.startswith("nv_gpu_"):
                gpu.setdefault(name, []).append(value)
            continue
        m = acc.setdefault(model, {"counters": {}, "failures": {}, "pending": None, "quantiles": {}})
        if name in COUNTERS:
            _add(m["counters"], name, value)
        elif name == FAILURE:
            _add(m["failures"], labels.get("reason", "UNKNOWN"), value)
        elif name == PENDING:
            m["pending"] = (m["pending"] or 0.0) + value
        elif name in SUMMARIES and "quantile" in labels:
            # Quantiles of several versions cannot be summed; keep the worst.
            key = (name, float(labels["quantile"]))
            old = m["quantiles"].get(key)
            m["quantiles"][key] = value if old is None or math.isnan(old) or value > old else old
    return Scrape(
        t=t,
        models={name: ModelValues(**values) for name, values in acc.items()},
        cpu_util=cpu,
        gpu_util=_mean(gpu.get("nv_gpu_utilization")),
        gpu_mem_bytes=_sum(gpu.get("nv_gpu_memory_used_bytes")),
        gpu_mem_total_bytes=_sum(gpu.get("nv_gpu_memory_total_bytes")),
    )


def _add(target: dict, key: str, value: float) -> None:
    target[key] = target.get(key, 0.0) + value


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def _sum(values: list[float] | None) -> float | None:
    return sum(values) if values else None
