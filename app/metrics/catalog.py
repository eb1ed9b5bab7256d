"""The one table of metrics: every label, unit, direction, source and display format comes from here."""
from __future__ import annotations

import math
from dataclasses import dataclass

from loadgen.behind import BEHIND_MS, BEHIND_SHARE

INTERVAL = "scrape interval"
INSTANT = "instant"
SUMMARY_WINDOW = "60 s sliding window (server summary)"
SERVER, CLIENT = "server", "client"
MIN_SAMPLES = 100  # fewer successful requests than this in a window: its percentiles are marked "few samples"


@dataclass(frozen=True)
class Metric:
    """What a figure means: unit, label, which way is better, where it comes from, how to show it."""

    key: str
    unit: str
    label: str
    lower_is_better: bool | None  # None: neither direction is better (utilization, executions, batch size)
    description: str
    origin: str  # the Prometheus series (server) or the load generator's field (client)
    window: str = INTERVAL
    side: str = SERVER
    scale: float = 1.0  # shown value = value * scale, in display_unit
    display_unit: str | None = None
    digits: int = 1
    presenter: str = ""  # the words /demo says it in, for an audience ('' = the label); the label stays on hover

    @property
    def shown_unit(self) -> str:
        """Return the unit the value is shown in."""
        return self.display_unit or self.unit

    @property
    def percentile(self) -> bool:
        """Return True for a latency percentile (needs enough samples to mean something)."""
        return self.key[0] == "p" and self.key[1:3].isdigit()


_D = "nv_inference_{}_duration_us"
_S = "nv_inference_{}_summary_us"


def _server_quantile(key: str, label: str, summary: str, presenter: str = "") -> Metric:
    description = (f"{label} over the server's sliding window; only where its latency summaries are on (off in "
                   "Triton and in the servers the lab starts, unless TBL_SERVER_SUMMARIES=1).")
    return Metric(key, "µs", label, True, description, _S.format(summary), SUMMARY_WINDOW, scale=1e-3,
                  display_unit="ms", digits=2, presenter=presenter)


def _us(key: str, label: str, description: str, origin: str, presenter: str = "") -> Metric:
    return Metric(key, "µs", label, True, description, origin, scale=1e-3, display_unit="ms", digits=2,
                  presenter=presenter)


SERVER_METRICS: tuple[Metric, ...] = (
    Metric("infer_rps", "infer/s", "server throughput", False,
           "Inferences per second; a request of batch 4 counts 4.", "nv_inference_count", digits=0,
           presenter="inferences per second"),
    Metric("request_rps", "req/s", "server successes", False,
           "Successful requests per second.", "nv_inference_request_success", digits=0),
    Metric("exec_rps", "exec/s", "executions", None,
           "Model executions (batches) per second.", "nv_inference_exec_count", digits=0),
    Metric("fail_rps", "req/s", "server failures", True,
           "Failed requests per second, all reasons.", "nv_inference_request_failure"),
    Metric("fail_by_reason", "req/s", "failures by reason", True,
           "Failed requests per second per reason: REJECTED, CANCELED, BACKEND, OTHER.",
           "nv_inference_request_failure"),
    Metric("avg_batch", "inferences", "average batch size", None,
           "Inferences per execution. Larger batches use the device better, but a small batch at light load is no "
           "fault: neither direction is better by itself (what counts is latency and goodput).",
           "nv_inference_count / nv_inference_exec_count", digits=2, presenter="requests per batch"),
    _us("queue_us", "queue + batching wait", "Average wait of a successful request in the scheduler queue, "
        "batching delay included.", _D.format("queue"), presenter="waiting in the queue"),
    _us("compute_input_us", "compute input", "Average time per request preparing inputs.",
        _D.format("compute_input"), presenter="preparing inputs"),
    _us("compute_infer_us", "compute infer", "Average time per request executing the model.",
        _D.format("compute_infer"), presenter="running the model"),
    _us("compute_output_us", "compute output", "Average time per request handling outputs.",
        _D.format("compute_output"), presenter="handling outputs"),
    _us("compute_us", "compute", "Average compute time per request: input + infer + output.",
        "nv_inference_compute_{input,infer,output}_duration_us", presenter="computing"),
    _us("request_us", "server request time", "Average time of a successful request inside the server.",
        _D.format("request"), presenter="time in the server"),
    Metric("queue_share", "fraction", "queue share of server time", True,
           "Queue + batching wait as a share of the server request time (the rest is compute and overhead).",
           "nv_inference_queue_duration_us / nv_inference_request_duration_us", scale=100, display_unit="%",
           digits=0, presenter="time spent waiting"),
    Metric("pending", "requests", "pending requests", True,
           "Requests waiting for execution when scraped (queue depth).", "nv_inference_pending_request_count", INSTANT,
           presenter="requests waiting"),
    _server_quantile("p50_us", "server p50 (60 s)", "request", "server: half within (last min)"),
    _server_quantile("p90_us", "server p90 (60 s)", "request"),
    _server_quantile("p95_us", "server p95 (60 s)", "request"),
    _server_quantile("p99_us", "server p99 (60 s)", "request", "server: 99 % within (last min)"),
    _server_quantile("queue_p99_us", "server queue p99 (60 s)", "queue"),
    _server_quantile("compute_infer_p99_us", "server infer p99 (60 s)", "compute_infer"),
    Metric("cpu_util", "fraction", "CPU utilization", None, "Host CPU utilization, 0 to 1.", "nv_cpu_utilization",
           INSTANT, scale=100, display_unit="%", digits=0),
    Metric("gpu_util", "fraction", "GPU utilization", None,
           "Mean utilization over GPUs, 0 to 1; None when the server exports no GPU metrics.", "nv_gpu_utilization",
           INSTANT, scale=100, display_unit="%", digits=0, presenter="GPU busy"),
    Metric("gpu_mem_bytes", "bytes", "GPU memory used", True,
           "GPU memory used, summed over GPUs; None without GPU metrics.", "nv_gpu_memory_used_bytes", INSTANT,
           scale=1e-9, display_unit="GB", digits=2),
    Metric("gpu_mem_total_bytes", "bytes", "GPU memory total", None,
           "GPU memory, summed over GPUs; None without GPU metrics.", "nv_gpu_memory_total_bytes", INSTANT,
           scale=1e-9, display_unit="GB", digits=2),
    Metric("infer_count", "inferences", "inferences", False, "Inferences in the interval.", "nv_inference_count",
           digits=0),
    Metric("request_count", "requests", "successful requests", False, "Successful requests in the interval.",
           "nv_inference_request_success", digits=0),
    Metric("exec_count", "executions", "executions in the interval", None, "Executions in the interval.", "nv_inference_exec_count",
           digits=0),
    Metric("fail_count", "requests", "failed requests", True, "Failed requests in the interval.",
           "nv_inference_request_failure", digits=0),
)


def _client(key: str, unit: str, label: str, lower: bool | None, description: str, digits: int = 1,
            presenter: str = "") -> Metric:
    return Metric(key, unit, label, lower, description, f"load generator: {key}", INTERVAL, CLIENT, digits=digits,
                  presenter=presenter)


CLIENT_METRICS: tuple[Metric, ...] = (
    _client("throughput_rps", "req/s", "client ok throughput", False,
            "Successful answers per second seen by the clients.", 0, "answers per second"),
    _client("goodput_rps", "req/s", "goodput within SLA", False,
            "Answers per second that were right and within the class's SLA, counted from the request's slot.", 0,
            "on-time answers per second"),
    _client("offered_rps", "req/s", "offered attempts", None, "Attempts sent per second, retries included.", 0,
            "requests sent per second"),
    _client("p50_ms", "ms", "client p50", True, "Median latency of successful requests (client side).", 2,
            "half answered within"),
    _client("p90_ms", "ms", "client p90", True, "90th percentile latency of successful requests.", 2),
    _client("p95_ms", "ms", "client p95", True, "95th percentile latency of successful requests.", 2),
    _client("p99_ms", "ms", "client p99", True, "99th percentile latency of successful requests (the authority).", 2,
            "99 % answered within"),
    _client("mean_ms", "ms", "client mean", True, "Mean latency of successful requests.", 2),
    _client("ok", "requests", "ok", False, "Successful answers.", 0),
    _client("rejected", "requests", "rejected", True, "Requests the server's queue policy rejected.", 0),
    _client("timeouts", "requests", "client timeouts", True, "Requests the client gave up on.", 0),
    _client("errors", "requests", "errors", True, "Other failed requests.", 0),
    _client("failed", "requests", "client failures", True,
            "Attempts that failed, every kind: rejected, timed out, refused or broken (HTTP 4xx/5xx), wrong answers.",
            0),
    Metric("failed_share", "fraction", "failed attempts", True,
           "Failed attempts as a share of the attempts that ended (answered or failed; cancelled ones left out). "
           "Latency percentiles describe only the answered ones.", "load generator: failed / (ok + failed)", INTERVAL,
           CLIENT, scale=100, display_unit="%", digits=1, presenter="requests failing"),
    _client("wrong_output", "requests", "wrong outputs", True, "Answers that failed the output check.", 0),
    _client("late", "requests", "late sends", True,
            "Open loop: requests sent later than their slot allows (1 ms by default; a busy CPU's jitter shows here).",
            0),
    _client("behind", "requests", f"sends over {BEHIND_MS:g} ms late", True,
            f"Open loop: requests sent over {BEHIND_MS:g} ms after their slot. Over {BEHIND_SHARE:.0%} of them: "
            "the load generator fell behind and the server saw a lighter load than asked (loadgen.behind).", 0),
    _client("held", "requests", "held by a reload", None,
            "Requests in flight while a config reload was under way: counted, left out of before/after comparisons.",
            0),
    # Decoupled models (gRPC stream, loadgen.response_stats): successful requests only, in the second they ended.
    _client("responses_rps", "resp/s", "streamed responses", False,
            "Data responses per second of a decoupled model's successful requests (the empty final flag is not one); "
            "a request's responses count in the second it ended.", 0,
            "streamed answers per second"),
    _client("responses", "responses", "responses", False,
            "Data responses of a decoupled model's successful requests.", 0),
    _client("first_p50_ms", "ms", "time to first response p50", True,
            "Median time from sending a request to its first data response (decoupled models).", 2,
            "first answer, median"),
    _client("first_p99_ms", "ms", "time to first response p99", True,
            "99th percentile time from sending a request to its first data response (decoupled models).", 2,
            "first answer, 99 % within"),
    _client("gap_p50_ms", "ms", "time between responses p50", True,
            "Median over requests of (latency - time to first response) / (responses - 1), requests of 2+ "
            "responses: the mean gap of each request's stream, latency to its final response.", 2,
            "between answers, median"),
    _client("gap_p99_ms", "ms", "time between responses p99", True,
            "99th percentile over requests of each request's mean gap between responses (requests of 2+ responses).",
            2),
)

METRICS: tuple[Metric, ...] = SERVER_METRICS + CLIENT_METRICS
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
BREAKDOWN: tuple[str, ...] = ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")
ROW_KEYS: tuple[str, ...] = ("t", "interval_s", "up", "error", "reset", "delta", *(m.key for m in SERVER_METRICS))


def metric(key: str) -> Metric:
    """Return the metadata of a figure, or raise KeyError naming the known keys."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown metric {key!r}; known: {', '.join(BY_KEY)}") from None


def label(key: str, with_unit: bool = True) -> str:
    """Return the figure's label, with its display unit in brackets."""
    m = metric(key)
    return f"{m.label} ({m.shown_unit})" if with_unit else m.label


def presenter_label(key: str) -> str:
    """Return the figure's name for an audience (/demo): its presenter words, else its label."""
    m = metric(key)
    return m.presenter or m.label


def better(key: str, a: float, b: float) -> bool:
    """Return True when value a is better than b for this metric (never for a neutral metric)."""
    lower = metric(key).lower_is_better
    if lower is None:
        return False
    return a < b if lower else a > b


def shown(key: str, value) -> float | None:
    """Return the value in its display unit (None stays None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value * metric(key).scale


def fmt(key: str, value, unit: bool = True) -> str:
    """Return the value at the metric's precision with thousands separators and its unit ('—' when absent)."""
    value = shown(key, value)
    if value is None:
        return "—"
    m = metric(key)
    text = f"{value:,.{m.digits}f}"
    return f"{text} {m.shown_unit}" if unit and m.shown_unit not in ("requests", "inferences", "executions") else text
