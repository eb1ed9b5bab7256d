"""Background thread that scrapes /metrics and the statistics API and keeps a bounded history.

When /metrics does not answer but the HTTP API does, the rows come from the statistics API (stats_source.py):
the same counters, so every window function works unchanged, without the gauges and summaries only /metrics has.
/metrics is tried again every METRICS_RETRY_S seconds meanwhile, and used again as soon as it answers.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.metrics.deltas import empty_row, model_row
from app.metrics.scrape import Scrape, fetch_text, parse_metrics
from app.metrics.statistics_api import ModelStats, batch_time_delta, merge_hist, parse_stats, per_item_us, stats_url
from app.metrics.stats_source import METRICS, MISSING, STATISTICS, stats_scrape
from app.metrics.window import CounterDelta, server_window


PATTERN_MIN_EXECUTIONS = 10  # a batch size's per-item time in a window counts from this many executions
METRICS_RETRY_S = 10.0  # while the statistics API stands in, /metrics is tried this often (a firewalled port costs 2 s)


@dataclass(frozen=True)
class Sample:
    """One poll: whether the server answered, and a row and batch histogram per model."""

    t: float
    up: bool
    error: str | None = None
    rows: dict[str, dict] = field(default_factory=dict)
    batches: dict[str, dict[int, int]] = field(default_factory=dict)
    batch_times: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)  # (n, infer ns, io ns)
    source: str | None = METRICS  # where the rows' counters come from: METRICS or STATISTICS (None: no answer)
    metrics_error: str | None = None  # why /metrics was not used, when it was not


@dataclass(frozen=True)
class MetricsSnapshot:
    """What the dashboard draws: one model's timeline and batch sizes within a window."""

    model: str | None
    window_s: float
    up: bool
    error: str | None
    timeline: list[dict]
    batch_hist: dict[int, int]
    latest: dict | None
    models: tuple[str, ...] = ()
    per_item_us_by_batch: dict[int, float] = field(default_factory=dict)
    source: str | None = None  # where the latest figures come from: "metrics", "statistics API", None before any
    source_note: str | None = None  # why not /metrics, when the statistics API stands in

    @property
    def missing(self) -> tuple[str, ...]:
        """Return what the latest figures lack because /metrics did not answer."""
        return MISSING if self.source == STATISTICS else ()


class MetricsPoller:
    """Own the scraping thread; survive a dead or restarting server; hand out thread-safe snapshots."""

    def __init__(self, endpoint, interval_s: float = 1.0, models: tuple[str, ...] | None = None,
                 history_s: float = 900.0, clock: Callable[[], float] = time.time,
                 fetch: Callable[[str], str] = fetch_text, metrics_retry_s: float = METRICS_RETRY_S) -> None:
        self.endpoint, self.interval_s, self.models = endpoint, interval_s, models
        self._clock, self._fetch, self._metrics_retry_s = clock, fetch, metrics_retry_s
        self._history: deque[Sample] = deque(maxlen=math.ceil(history_s / interval_s) + 1)
        self._lock, self._poll_lock, self._stop = threading.Lock(), threading.Lock(), threading.Event()
        self._prev: Scrape | None = None
        self._prev_stats: dict[str, ModelStats] | None = None
        self._prev_stats_t = 0.0
        self._metrics_retry_at: float | None = None  # set while the statistics API stands in for /metrics
        self._metrics_error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start polling in a daemon thread (no-op when already running)."""
        if self.running():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tbl-metrics-poller", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._thread = None

    def running(self) -> bool:
        """Return True while the polling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def poll_once(self) -> Sample:
        """Scrape once, append the sample to the history and return it; never raises."""
        with self._poll_lock:
            sample = self._poll()
        with self._lock:
            self._history.append(sample)
        return sample

    def export(self, since: float) -> list[dict]:
        """Return the samples after since (epoch s) as JSON-ready values (the history store)."""
        with self._lock:
            samples = [s for s in self._history if s.t > since]
        return [{"t": s.t, "up": s.up, "error": s.error, "rows": {m: _plain(r) for m, r in s.rows.items()},
                 "batches": {m: {str(b): n for b, n in h.items()} for m, h in s.batches.items()},
                 "batch_times": {m: {str(b): list(v) for b, v in h.items()} for m, h in s.batch_times.items()},
                 "source": s.source, "metrics_error": s.metrics_error}
                for s in samples]

    def restore(self, samples: list[dict]) -> int:
        """Put samples of an earlier dashboard process before the ones polled since; return how many."""
        restored = [Sample(d["t"], d["up"], d.get("error"), {m: _typed(r) for m, r in d.get("rows", {}).items()},
                           {m: {int(b): int(n) for b, n in h.items()} for m, h in d.get("batches", {}).items()},
                           {m: {int(b): tuple(v) for b, v in h.items()} for m, h in d.get("batch_times", {}).items()},
                           d.get("source", METRICS if d["up"] else None), d.get("metrics_error"))
                    for d in sorted(samples, key=lambda d: d["t"])]
        with self._lock:
            first = self._history[0].t if self._history else float("inf")
            kept = [s for s in restored if s.t < first]
            merged = kept + list(self._history)
            self._history.clear()
            self._history.extend(merged[-self._history.maxlen:])
        return len(kept)

    def snapshot(self, model: str | None = None, window_s: float = 120.0, now: float | None = None) -> MetricsSnapshot:
        """Return the samples of the window_s seconds up to now (default: the clock) as one model's timeline."""
        with self._lock:
            samples = list(self._history)
        now = self._clock() if now is None else now
        since = now - window_s
        recent = [s for s in samples if since < s.t <= now]
        last = samples[-1] if samples else None
        known = sorted({name for s in samples for name in s.rows})
        timeline = [self._row(s, model) for s in recent] if model else []
        hist = merge_hist(s.batches.get(model, {}) for s in recent) if model else {}
        per_item = per_item_us(s.batch_times.get(model, {}) for s in recent) if model else {}
        return MetricsSnapshot(model, window_s, bool(last and last.up),
                               last.error if last else "waiting for the first scrape",
                               timeline, hist, timeline[-1] if timeline else None, tuple(known), per_item,
                               last.source if last else None,
                               last.metrics_error if last and last.source == STATISTICS else None)

    def window(self, model: str, t0: float, t1: float) -> dict:
        """Return one model's server figures over [t0, t1) from counter differences, with its batch sizes.

        Adds `batch_hist` and `per_item_us_by_batch` (statistics API differences), `up` (every poll in
        the window answered), `down_s` (seconds the window was without an answer) and `cpu_util` (the host's CPU
        utilisation over the window, host_cpu).
        """
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        out = server_window([self._row(s, model) for s in samples], t0, t1)
        out["batch_hist"] = merge_hist(s.batches.get(model, {}) for s in samples)
        out["per_item_us_by_batch"] = per_item_us((s.batch_times.get(model, {}) for s in samples),
                                                  min_executions=PATTERN_MIN_EXECUTIONS)
        out["up"] = bool(samples) and all(s.up for s in samples)
        out["down_s"] = self.interval_s * sum(1 for s in samples if not s.up)
        out["cpu_util"] = self.host_cpu(t0, t1)
        return out

    def delta(self, model: str, t0: float, t1: float) -> tuple[CounterDelta, dict[int, int]]:
        """Return one model's summed counter differences and batch sizes of the polls that end in (t0, t1]."""
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        deltas = [r["delta"] for r in (s.rows.get(model) or {} for s in samples) if r.get("delta") is not None]
        return sum(deltas, CounterDelta()), merge_hist(s.batches.get(model, {}) for s in samples)

    def stats_window(self, model: str, t0: float, t1: float) -> ModelStats:
        """Return one model's statistics over the polls that end in (t0, t1] as one read from zero: the summed
        differences per batch size (executions, compute-infer ns) and the request totals (the twin's calibration)."""
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        batches: dict[int, int] = {}
        batch_ns: dict[int, int] = {}
        batch_io_ns: dict[int, int] = {}
        for sample in samples:
            for size, (n, ns, *io) in sample.batch_times.get(model, {}).items():  # io: absent in older history
                batches[size] = batches.get(size, 0) + n
                batch_ns[size] = batch_ns.get(size, 0) + ns
                batch_io_ns[size] = batch_io_ns.get(size, 0) + (io[0] if io else 0)
        delta, _ = self.delta(model, t0, t1)
        c = delta.counters
        success = int(c.get("nv_inference_request_success", 0))
        durations = {"success": "nv_inference_request_duration_us", "queue": "nv_inference_queue_duration_us",
                     "compute_input": "nv_inference_compute_input_duration_us",
                     "compute_infer": "nv_inference_compute_infer_duration_us",
                     "compute_output": "nv_inference_compute_output_duration_us"}
        return ModelStats(batches, int(c.get("nv_inference_count", 0)), int(c.get("nv_inference_exec_count", 0)),
                          dict.fromkeys(durations, success),
                          {k: int(c.get(name, 0.0) * 1000) for k, name in durations.items()}, batch_ns, batch_io_ns)

    def host_cpu(self, t0: float, t1: float) -> float | None:
        """Return the server host's CPU utilisation over the polls that end in (t0, t1] (the mean of Triton's
        nv_cpu_utilization gauge, 0-1; None where the server does not report it)."""
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        # every model's row of a poll holds the same host-wide reading
        readings = [next((r["cpu_util"] for r in s.rows.values() if r.get("cpu_util") is not None), None)
                    for s in samples]
        readings = [x for x in readings if x is not None]
        return sum(readings) / len(readings) if readings else None

    def retarget(self, endpoint) -> None:
        """Scrape another endpoint from the next poll on (after a restart); the history stays."""
        with self._poll_lock:
            self.endpoint = endpoint
            self._prev = self._prev_stats = None
            self._metrics_retry_at = None

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.poll_once()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def _poll(self) -> Sample:
        cur, metrics_error = self._read_metrics()
        t = cur.t if cur is not None else self._clock()
        try:
            stats, stats_error = parse_stats(self._fetch(stats_url(self.endpoint.http_url))), None
        except Exception as exc:  # noqa: BLE001 - metrics still count without the batch sizes
            stats, stats_error = None, f"statistics API: {_describe(exc)}"
        prev, self._prev = self._prev, cur
        before, before_t = self._prev_stats, self._prev_stats_t
        self._prev_stats, self._prev_stats_t = stats, t
        if cur is None and stats is None:  # a dead server is a row, not a crash; rates restart from the next answer
            self._metrics_retry_at = None
            return Sample(t, False, "; ".join(filter(None, (metrics_error, stats_error))), source=None,
                          metrics_error=metrics_error)
        if cur is None:
            self._metrics_retry_at = self._metrics_retry_at or t + self._metrics_retry_s
        else:
            self._metrics_retry_at = self._metrics_error = None
        # /metrics once it has a baseline; the statistics API across a switch, so no interval is lost.
        if cur is not None and (prev is not None or before is None or stats is None):
            source, rows = METRICS, self._rows(prev, cur, METRICS)
        else:
            base = stats_scrape(before, before_t) if before is not None else None
            source, rows = STATISTICS, self._rows(base, stats_scrape(stats, t), STATISTICS)
        if stats is None:
            return Sample(t, True, stats_error, rows, source=source)
        if before is None:
            return Sample(t, True, None, rows, source=source, metrics_error=metrics_error)
        times = {n: batch_time_delta(before.get(n), stats[n]) for n in rows if n in stats}
        batches = {n: {size: count for size, (count, *_) in per_size.items()} for n, per_size in times.items()}
        return Sample(t, True, None, rows, batches, times, source, metrics_error)

    def _read_metrics(self) -> tuple[Scrape | None, str | None]:
        """Return /metrics parsed now, or None and why (the last error while a retry is not yet due)."""
        if self._metrics_retry_at is not None and self._clock() < self._metrics_retry_at:
            return None, self._metrics_error
        try:
            return parse_metrics(self._fetch(self.endpoint.metrics_url), self._clock()), None
        except Exception as exc:  # noqa: BLE001 - said in the sample; the statistics API may stand in
            self._metrics_error = f"{self.endpoint.metrics_url}: {_describe(exc)}"
            return None, self._metrics_error

    def _rows(self, prev: Scrape | None, cur: Scrape, source: str) -> dict[str, dict]:
        names = self.models or tuple(sorted(set(cur.models) | set(prev.models if prev else ())))
        rows = {name: model_row(prev, cur, name) for name in names}
        if source == STATISTICS:  # model_row names /metrics for a model it does not find
            for row in rows.values():
                if row.get("error"):
                    row["error"] = row["error"].replace("/metrics", "the statistics API")
        return rows

    def _row(self, sample: Sample, model: str) -> dict:
        row = sample.rows.get(model)
        if row is None:
            where = "the statistics API" if sample.source == STATISTICS else "/metrics"
            reason = sample.error if not sample.up else f"model {model!r} is not in {where} (not loaded?)"
            return empty_row(sample.t, sample.up, reason)
        reasons = row["fail_by_reason"]
        return dict(row, fail_by_reason=dict(reasons) if reasons is not None else None)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _plain(row: dict) -> dict:
    """Return a row with its counter delta as a dict (JSON-ready)."""
    delta = row.get("delta")
    return dict(row, delta=dataclasses.asdict(delta)) if isinstance(delta, CounterDelta) else row


def _typed(row: dict) -> dict:
    """Undo _plain."""
    delta = row.get("delta")
    return dict(row, delta=CounterDelta(**delta)) if isinstance(delta, dict) else row
