"""The two sides of a window's figures, typed: the server's (counter differences) and each traffic class's client
figures. Each reads a stored dict tolerantly (from_dict) and writes back the JSON the store keeps (to_dict), key for key
the dicts their producers below app/ return (app.metrics.window, MetricsPoller.window, loadgen.stats); get(key) picks a
figure by its key, for the code the metric table drives. app.timeline.figures.Figures holds one of each per window.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields
from typing import Self

Number = float | None


def number(value) -> Number:
    """Return a stored number as it is; None for NaN (JSON's "could not be computed"), text, true/false or anything
    else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if isinstance(value, float) and math.isnan(value) else value


def _mapping(value) -> dict | None:
    return dict(value) if isinstance(value, dict) else None


def _by_size(value) -> dict[int, float] | None:
    """Return a mapping keyed by batch size (JSON keeps its keys as text), entries that are no size left out."""
    if not isinstance(value, dict):
        return None
    out = {}
    for k, v in value.items():
        try:
            out[int(k)] = v
        except (TypeError, ValueError):
            continue
    return out


def _pair(value) -> tuple | None:
    return tuple(value) if isinstance(value, (list, tuple)) and len(value) == 2 else None


def _flag(value) -> bool | None:
    return value if isinstance(value, bool) else None


class _Side:
    """What both sides share: read tolerantly from a stored dict, written back with the producer's keys."""

    _READ: dict = {}  # field -> reader of its stored value (numbers otherwise)
    _ALWAYS: frozenset[str] = frozenset()  # keys the producer writes even when None

    @classmethod
    def from_dict(cls, data: dict | None) -> Self:
        """Return the figures of a stored dict: unknown keys ignored, a missing or unreadable one takes its default."""
        data = data if isinstance(data, dict) else {}
        values = {}
        for f in fields(cls):
            value = cls._READ.get(f.name, number)(data.get(f.name))
            if value is not None:
                values[f.name] = value
        return cls(**values)

    def to_dict(self) -> dict:
        """Return the JSON form the store keeps: the producer's keys (a figure it does not write only when measured)."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {k: dict(v) if isinstance(v, dict) else v for k, v in values if v is not None or k in self._ALWAYS}

    def get(self, key: str):
        """Return a figure by its key (the catalog's, or a row's own), None when it is not one of these figures."""
        return getattr(self, key) if key in _names(type(self)) else None


@functools.cache
def _names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True)
class ServerFigures(_Side):
    """The server's figures of a window: the catalog's server metrics from counter differences
    (app.metrics.window.server_figures), and what a poller's window adds (MetricsPoller.window); None: not measured."""

    infer_count: Number = None
    request_count: Number = None
    exec_count: Number = None
    fail_count: Number = None
    infer_rps: Number = None
    request_rps: Number = None
    exec_rps: Number = None
    fail_rps: Number = None
    fail_by_reason: dict[str, Number] | None = None  # reason -> failed requests/s
    avg_batch: Number = None
    queue_us: Number = None
    compute_input_us: Number = None
    compute_infer_us: Number = None
    compute_output_us: Number = None
    request_us: Number = None
    compute_us: Number = None
    queue_share: Number = None
    # the poller's window (app.metrics.window.server_window, MetricsPoller.window)
    span: tuple[float, float] | None = None  # (first interval's start, last interval's end) actually covered
    intervals: int | None = None  # scrape intervals measured (None: no poller window, e.g. a meter's exact edges)
    resets: int | None = None  # counter restarts inside
    pending: Number = None  # the queue gauge's time average
    pending_last: Number = None
    pending_trend: Number = None  # its least-squares slope, requests/s
    batch_hist: dict[int, int] | None = None  # batch size -> executions (statistics API differences)
    per_item_us_by_batch: dict[int, float] | None = None
    up: bool | None = None  # every poll in the window answered
    down_s: Number = None  # seconds the window was without an answer
    # the catalog's instant and sliding-window readings: a window computes cpu_util (the mean of the polls' readings),
    # none the others today (a row that has them keeps them)
    p50_us: Number = None
    p90_us: Number = None
    p95_us: Number = None
    p99_us: Number = None
    queue_p99_us: Number = None
    compute_infer_p99_us: Number = None
    cpu_util: Number = None
    gpu_util: Number = None
    gpu_mem_bytes: Number = None
    gpu_mem_total_bytes: Number = None

    _READ = {"fail_by_reason": _mapping, "span": _pair, "batch_hist": _by_size, "per_item_us_by_batch": _by_size,
             "up": _flag}
    _ALWAYS = frozenset(("infer_count", "request_count", "exec_count", "fail_count", "infer_rps", "request_rps",
                         "exec_rps", "fail_rps", "fail_by_reason", "avg_batch", "queue_us", "compute_input_us",
                         "compute_infer_us", "compute_output_us", "request_us", "compute_us", "queue_share"))

    def to_dict(self) -> dict:
        """Return the JSON form the store keeps; {} for a server side that measured nothing (as stored before)."""
        return super().to_dict() if any(getattr(self, f.name) is not None for f in fields(self)) else {}


@dataclass(frozen=True)
class ClientFigures(_Side):
    """One traffic class's client figures of a window (loadgen.stats.Bucket.row and window_rows): counts, rates,
    latency percentiles with their sample count, failures in their own words, streamed responses; a scenario's
    streamed generations (loadgen.generate_stream.stream_figures) fill the fields at the end."""

    sent: int = 0  # attempts, retries included
    requests: int = 0  # first attempts
    ok: int = 0
    failed: int = 0
    failed_share: Number = None  # of the attempts that ended
    rejected: int = 0
    timeouts: int = 0
    errors: int = 0
    wrong_output: int = 0
    cancelled: int = 0
    late: int = 0
    behind: int = 0
    retries: int = 0
    held: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    error_texts: dict[str, dict] = field(default_factory=dict)  # kind -> {count, first, first_t, latest, latest_t}
    throughput_rps: Number = None
    goodput_rps: Number = None
    offered_rps: Number = None
    latency_n: int = 0  # latencies behind the percentiles
    p50_ms: Number = None
    p90_ms: Number = None
    p95_ms: Number = None
    p99_ms: Number = None
    responses: int = 0  # streamed answers of a decoupled model (loadgen.response_stats)
    responses_rps: Number = None
    first_n: int = 0
    first_p50_ms: Number = None
    first_p99_ms: Number = None
    gap_n: int = 0
    gap_p50_ms: Number = None
    gap_p99_ms: Number = None
    # what a window adds (written only when there)
    seconds: Number = None  # whole seconds (or the meter's span) the row covers
    span: tuple[float, float] | None = None  # (first second's start, last one's end), epoch s
    target_rps: Number = None  # what the running open loop asks over the window (the live lab's measure)
    mean_ms: Number = None
    # streamed generations of a scenario phase (loadgen.generate_stream.stream_figures)
    window_s: Number = None
    n: int | None = None
    failures: int | None = None
    requests_per_s: Number = None
    tokens_per_s: Number = None
    ttft_p50_ms: Number = None
    ttft_p99_ms: Number = None
    e2e_p50_ms: Number = None
    e2e_p99_ms: Number = None
    tpot_p50_ms: Number = None

    _READ = {"errors_by_kind": _mapping, "error_texts": _mapping, "span": _pair}
    _ALWAYS = frozenset(("failed_share", "throughput_rps", "goodput_rps", "offered_rps", "p50_ms", "p90_ms", "p95_ms",
                         "p99_ms", "responses_rps", "first_p50_ms", "first_p99_ms", "gap_p50_ms", "gap_p99_ms"))


def client_rows(data: dict | None) -> dict[str, ClientFigures]:
    """Return per-class client figures of a stored (or freshly computed) {class: row}; a row that is no mapping is
    left out."""
    data = data if isinstance(data, dict) else {}
    return {cls: ClientFigures.from_dict(row) for cls, row in data.items() if isinstance(row, dict)}
