"""Measurement windows with exact edges, for sweeps and A/B trials.

The live pages read whole seconds (per-second buckets, one scrape a second). An experiment point
needs windows that start right after a warm-up and end when the figures have settled, so the meter
takes its own edges: client figures from every attempt that ended inside [t0, t1) (the same Bucket
the live statistics use, so the same percentile and goodput rules), server figures from the counter
differences of a /metrics scrape and a statistics API read taken at each edge.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.metrics.deltas import counter_deltas
from app.metrics.scrape import ModelValues, fetch_text, parse_metrics
from app.metrics.statistics_api import ModelStats, batch_delta, merge_hist, parse_stats, stats_url
from app.metrics.window import CounterDelta, server_figures
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures, client_rows
from loadgen.records import Record
from loadgen.stats import Bucket, is_good, window_rows

FLUSH_LAG_S = 0.12  # the generator hands records over every 50 ms: wait this long past an edge


class ServerGone(RuntimeError):
    """The server stopped answering during a measurement (dead or restarting)."""


@dataclass(frozen=True)
class Edge:
    """What the server's counters said at one edge of a window."""

    t: float
    values: ModelValues
    stats: ModelStats | None
    cpu_util: float | None = None  # the server host's CPU utilisation, 0-1 (Triton's nv_cpu_utilization gauge, over
    # its last metrics interval; None: the server does not report it)


@dataclass
class MeasuredWindow:
    """One measurement window: client buckets per class and the server's counter differences."""

    t0: float
    t1: float
    buckets: dict[str, Bucket] = field(default_factory=dict)
    delta: CounterDelta = field(default_factory=CounterDelta)
    batches: dict[int, int] = field(default_factory=dict)
    reset: bool = False  # the server's counters restarted inside (a reload): the server side is partial

    @property
    def seconds(self) -> float:
        """Return the window's length."""
        return self.t1 - self.t0

    def client(self) -> dict[str, ClientFigures]:
        """Return per-class (and 'all') client figures: counts, rates, merged-sample percentiles."""
        return client_rows(window_rows(self.buckets, self.seconds) if self.buckets else {})

    def server(self) -> ServerFigures:
        """Return the catalog's server figures from the counter differences, with the batch sizes."""
        return ServerFigures.from_dict({**server_figures(self.delta), "batch_hist": dict(sorted(self.batches.items()))})

    def figures(self, model: str = "") -> Figures:
        """Return the window's figures (app.timeline.figures.Figures): client per class, server, whether it reset."""
        return Figures(model, self.t0, self.t1, self.server(), self.client(), self.reset)

    def to_dict(self) -> dict:
        """Return JSON-ready values: buckets with their latency samples, counter differences, batch sizes."""
        return {"t0": self.t0, "t1": self.t1, "reset": self.reset,
                "buckets": {cls: b.to_dict() for cls, b in self.buckets.items()},
                "delta": {"seconds": self.delta.seconds, "counters": self.delta.counters,
                          "failures": self.delta.failures},
                "batches": {str(k): v for k, v in self.batches.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> MeasuredWindow:
        """Rebuild a window stored with to_dict()."""
        return cls(data["t0"], data["t1"], {c: Bucket.from_dict(b) for c, b in data.get("buckets", {}).items()},
                   CounterDelta(**data.get("delta", {})), {int(k): v for k, v in data.get("batches", {}).items()},
                   bool(data.get("reset")))


def merged(windows: list[MeasuredWindow]) -> MeasuredWindow:
    """Return one window covering several (consecutive) ones: buckets merged, counter differences summed."""
    if not windows:
        raise ValueError("nothing to merge")
    buckets: dict[str, Bucket] = {}
    for w in windows:
        for cls, bucket in w.buckets.items():
            buckets.setdefault(cls, Bucket()).merge(bucket)
    return MeasuredWindow(windows[0].t0, windows[-1].t1, buckets, sum((w.delta for w in windows), CounterDelta()),
                  merge_hist(w.batches for w in windows), any(w.reset for w in windows))


class Meter:
    """Collect the load generator's attempts for one model and cut them into windows with server edges."""

    def __init__(self, load, endpoint, model: str, slas_s: dict[str, float] | None = None,
                 fetch: Callable[[str], str] = fetch_text, clock: Callable[[], float] = time.time) -> None:
        self.load, self.endpoint, self.model = load, endpoint, model
        self.slas_s = dict(slas_s or {})
        self._fetch, self._clock = fetch, clock
        self._lock = threading.Lock()
        self._records: list[tuple[float, float, Record]] = []  # (sent epoch, done epoch, record)
        self._windows: list[MeasuredWindow] = []  # cut since the last discard_before: late answers count their sends there
        self._unsubscribe = load.subscribe(self._take)

    def close(self) -> None:
        """Stop listening to the generator."""
        self._unsubscribe()

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def edge(self) -> Edge:
        """Read the model's counters now; ServerGone when the server does not answer or lost the model."""
        url = self.endpoint.metrics_url
        try:
            text = self._fetch(url)
            url = stats_url(self.endpoint.http_url, self.model)
            stats = parse_stats(self._fetch(url))
        except Exception as exc:  # noqa: BLE001 - any failure to read means no measurement
            where = (f"its metrics at {url} (TRITON_METRICS_URL names them for a server the lab did not start)"
                     if url == self.endpoint.metrics_url else f"its statistics at {url}")
            raise ServerGone(f"the server did not answer at {where}: {type(exc).__name__}: {exc}") from exc
        scrape = parse_metrics(text, self._clock())
        values = scrape.models.get(self.model)
        if values is None:
            raise ServerGone(f"model {self.model!r} is not in /metrics (unloaded?)")
        return Edge(scrape.t, values, stats.get(self.model), scrape.cpu_util)

    def wait_until(self, t: float, cancel: threading.Event | None = None) -> None:
        """Sleep until clock time t (early when cancel is set)."""
        delay = t - self._clock()
        if delay > 0:
            if cancel is not None:
                cancel.wait(delay)
            else:
                time.sleep(delay)

    def window(self, start: Edge, end: Edge) -> MeasuredWindow:
        """Return the window between two edges (records that ended inside it; waits for the last hand-over)."""
        self.wait_until(end.t + FLUSH_LAG_S)
        counters, failures, reset = counter_deltas(start.values, end.values)
        batches = batch_delta(start.stats, end.stats) if end.stats is not None else {}
        buckets: dict[str, Bucket] = {}
        with self._lock:
            records = [x for x in self._records if x[1] < end.t]  # ended inside (or, sent earlier, just arrived)
            self._records = [x for x in self._records if x[1] >= end.t]
        for sent, done, r in records:
            if start.t <= sent < end.t:
                buckets.setdefault(r.cls, Bucket()).count_sent(r)
            else:  # an attempt sent in an earlier window answered in this one: its send counts there
                earlier = next((w for w in self._windows if w.t0 <= sent < w.t1), None)
                if earlier is not None:
                    earlier.buckets.setdefault(r.cls, Bucket()).count_sent(r)
            if start.t <= done < end.t:
                buckets.setdefault(r.cls, Bucket()).count_end(r, is_good(r, self.slas_s))
        window = MeasuredWindow(start.t, end.t, buckets, CounterDelta(end.t - start.t, counters, failures), batches, reset)
        self._windows.append(window)
        return window

    def discard_before(self, t: float) -> None:
        """Forget attempts that ended before t (a warm-up) and the windows cut so far: a new measurement starts."""
        with self._lock:
            self._records = [x for x in self._records if x[1] >= t]
        self._windows = []

    def _take(self, records: list[Record]) -> None:
        t0 = self.load.started_at
        if t0 is None:
            return
        rows = [(t0 + r.sent_s, t0 + r.done_s, r) for r in records if r.model == self.model]
        with self._lock:
            self._records.extend(rows)


def steady(windows: list[MeasuredWindow], tolerance: float, min_samples: int, min_windows: int = 2) -> tuple[bool, float]:
    """Return (settled, change): whether adding the last window moved the merged p99 and throughput
    by at most `tolerance` (a fraction), with at least min_samples latencies in all.

    This is the sweep's stopping rule: a point is measured until its figures stop moving.
    """
    if len(windows) < min_windows:
        return False, math.inf
    whole, before = merged(windows).figures().row(), merged(windows[:-1]).figures().row()
    if whole.latency_n < min_samples or not before.p99_ms or not before.throughput_rps:
        return False, math.inf
    change = max(abs(whole.p99_ms - before.p99_ms) / before.p99_ms,
                 abs(whole.throughput_rps - before.throughput_rps) / before.throughput_rps)
    return bool(change <= tolerance), float(change)  # plain types: the result is stored and charted as JSON
