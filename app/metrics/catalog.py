"""One table of metric metadata that drives charts, comparisons and the timeline's row keys."""
from __future__ import annotations

from dataclasses import dataclass

INTERVAL = "scrape interval"
INSTANT = "instant"
SUMMARY_WINDOW = "60 s sliding window (server summary)"


@dataclass(frozen=True)
class Metric:
    """What a timeline column means: unit, chart label, which way is better, where it comes from."""

    key: str
    unit: str
    label: str
    lower_is_better: bool | None  # None: neither direction is better (utilization, executions)
    description: str
    source: str
    window: str = INTERVAL


_D = "nv_inference_{}_duration_us"
_S = "nv_inference_{}_summary_us"
METRICS: tuple[Metric, ...] = (
    Metric("infer_rps", "inf/s", "Throughput", False,
           "Inferences per second; a request of batch 4 counts 4.", "nv_inference_count"),
    Metric("request_rps", "req/s", "Successful requests/s", False,
           "Successful requests per second.", "nv_inference_request_success"),
    Metric("exec_rps", "exec/s", "Executions/s", None,
           "Model executions (batches) per second.", "nv_inference_exec_count"),
    Metric("fail_rps", "req/s", "Failed requests/s", True,
           "Failed requests per second, all reasons.", "nv_inference_request_failure"),
    Metric("fail_by_reason", "req/s", "Failures by reason", True,
           "Failed requests per second per reason: REJECTED, CANCELED, BACKEND, OTHER.",
           "nv_inference_request_failure"),
    Metric("avg_batch", "inferences", "Average batch size", False,
           "Inferences per execution.", "nv_inference_count / nv_inference_exec_count"),
    Metric("queue_us", "µs", "Queue wait", True,
           "Average wait of a successful request in the scheduler queue, batching delay included.", _D.format("queue")),
    Metric("compute_input_us", "µs", "Compute input", True,
           "Average time per request preparing inputs.", _D.format("compute_input")),
    Metric("compute_infer_us", "µs", "Compute infer", True,
           "Average time per request executing the model.", _D.format("compute_infer")),
    Metric("compute_output_us", "µs", "Compute output", True,
           "Average time per request handling outputs.", _D.format("compute_output")),
    Metric("request_us", "µs", "Server request time", True,
           "Average time of a successful request inside the server.", _D.format("request")),
    Metric("pending", "requests", "Pending requests", True,
           "Requests waiting for execution when scraped (queue depth).", "nv_inference_pending_request_count", INSTANT),
    Metric("p50_us", "µs", "Server p50", True, "Median server request time.", _S.format("request"), SUMMARY_WINDOW),
    Metric("p90_us", "µs", "Server p90", True, "90th percentile server request time.", _S.format("request"),
           SUMMARY_WINDOW),
    Metric("p95_us", "µs", "Server p95", True, "95th percentile server request time.", _S.format("request"),
           SUMMARY_WINDOW),
    Metric("p99_us", "µs", "Server p99", True, "99th percentile server request time.", _S.format("request"),
           SUMMARY_WINDOW),
    Metric("queue_p99_us", "µs", "Queue wait p99", True, "99th percentile queue wait.", _S.format("queue"),
           SUMMARY_WINDOW),
    Metric("compute_infer_p99_us", "µs", "Compute infer p99", True, "99th percentile compute infer time.",
           _S.format("compute_infer"), SUMMARY_WINDOW),
    Metric("cpu_util", "fraction", "CPU utilization", None, "Host CPU utilization, 0 to 1.", "nv_cpu_utilization",
           INSTANT),
    Metric("gpu_util", "fraction", "GPU utilization", None,
           "Mean utilization over GPUs, 0 to 1; None when the server exports no GPU metrics.", "nv_gpu_utilization",
           INSTANT),
    Metric("gpu_mem_bytes", "bytes", "GPU memory used", True,
           "GPU memory used, summed over GPUs; None without GPU metrics.", "nv_gpu_memory_used_bytes", INSTANT),
    Metric("gpu_mem_total_bytes", "bytes", "GPU memory total", None,
           "GPU memory, summed over GPUs; None without GPU metrics.", "nv_gpu_memory_total_bytes", INSTANT),
    Metric("infer_count", "inferences", "Inferences", False, "Inferences in the interval.", "nv_inference_count"),
    Metric("request_count", "requests", "Successful requests", False, "Successful requests in the interval.",
           "nv_inference_request_success"),
    Metric("exec_count", "executions", "Executions", None, "Executions in the interval.", "nv_inference_exec_count"),
    Metric("fail_count", "requests", "Failed requests", True, "Failed requests in the interval.",
           "nv_inference_request_failure"),
)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
BREAKDOWN: tuple[str, ...] = ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")
ROW_KEYS: tuple[str, ...] = ("t", "interval_s", "up", "error", "reset", *BY_KEY)


def metric(key: str) -> Metric:
    """Return the metadata of a timeline column, or raise KeyError naming the known keys."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown metric {key!r}; known: {', '.join(BY_KEY)}") from None


def better(key: str, a: float, b: float) -> bool:
    """Return True when value a is better than b for this metric (never for a neutral metric)."""
    lower = metric(key).lower_is_better
    if lower is None:
        return False
    return a < b if lower else a > b
