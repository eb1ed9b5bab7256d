"""Background thread that scrapes /metrics and the statistics API and keeps a bounded history."""
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
from app.metrics.stats import ModelStats, batch_time_delta, merge_hist, parse_stats, per_item_us, stats_url
from app.metrics.window import CounterDelta, server_window


PATTERN_MIN_EXECUTIONS = 10  # a batch size's per-item time in a window counts from this many executions


@dataclass(frozen=True)
class Sample:
    """One poll: whether the server answered, and a row and batch histogram per model."""

    t: float
    up: bool
    error: str | None = None
    rows: dict[str, dict] = field(default_factory=dict)
    batches: dict[str, dict[int, int]] = field(default_factory=dict)
    batch_times: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)


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


class MetricsPoller:
    """Own the scraping thread; survive a dead or restarting server; hand out thread-safe snapshots."""

    def __init__(self, endpoint, interval_s: float = 1.0, models: tuple[str, ...] | None = None,
                 history_s: float = 900.0, clock: Callable[[], float] = time.time,
                 fetch: Callable[[str], str] = fetch_text) -> None:
        self.endpoint, self.interval_s, self.models = endpoint, interval_s, models
        self._clock, self._fetch = clock, fetch
        self._history: deque[Sample] = deque(maxlen=math.ceil(history_s / interval_s) + 1)
        self._lock, self._poll_lock, self._stop = threading.Lock(), threading.Lock(), threading.Event()
        self._prev: Scrape | None = None
        self._prev_stats: dict[str, ModelStats] | None = None
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
                 "batch_times": {m: {str(b): list(v) for b, v in h.items()} for m, h in s.batch_times.items()}}
                for s in samples]

    def restore(self, samples: list[dict]) -> int:
        """Put samples of an earlier dashboard process before the ones polled since; return how many."""
        restored = [Sample(d["t"], d["up"], d.get("error"), {m: _typed(r) for m, r in d.get("rows", {}).items()},
                           {m: {int(b): int(n) for b, n in h.items()} for m, h in d.get("batches", {}).items()},
                           {m: {int(b): tuple(v) for b, v in h.items()} for m, h in d.get("batch_times", {}).items()})
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
                               timeline, hist, timeline[-1] if timeline else None, tuple(known), per_item)

    def window(self, model: str, t0: float, t1: float) -> dict:
        """Return one model's server figures over [t0, t1) from counter differences, with its batch sizes.

        Adds `batch_hist` and `per_item_us_by_batch` (statistics API differences), `up` (every poll in
        the window answered) and `down_s` (seconds the window was without an answer).
        """
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        out = server_window([self._row(s, model) for s in samples], t0, t1)
        out["batch_hist"] = merge_hist(s.batches.get(model, {}) for s in samples)
        out["per_item_us_by_batch"] = per_item_us((s.batch_times.get(model, {}) for s in samples),
                                                  min_executions=PATTERN_MIN_EXECUTIONS)
        out["up"] = bool(samples) and all(s.up for s in samples)
        out["down_s"] = self.interval_s * sum(1 for s in samples if not s.up)
        return out

    def delta(self, model: str, t0: float, t1: float) -> tuple[CounterDelta, dict[int, int]]:
        """Return one model's summed counter differences and batch sizes of the polls that end in (t0, t1]."""
        with self._lock:
            samples = [s for s in self._history if t0 < s.t <= t1]
        deltas = [r["delta"] for r in (s.rows.get(model) or {} for s in samples) if r.get("delta") is not None]
        return sum(deltas, CounterDelta()), merge_hist(s.batches.get(model, {}) for s in samples)

    def retarget(self, endpoint) -> None:
        """Scrape another endpoint from the next poll on (after a restart); the history stays."""
        with self._poll_lock:
            self.endpoint = endpoint
            self._prev = self._prev_stats = None

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.poll_once()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def _poll(self) -> Sample:
        try:
            text = self._fetch(self.endpoint.metrics_url)
            cur = parse_metrics(text, self._clock())
        except Exception as exc:  # noqa: BLE001 - a dead server is a row, not a crash
            self._prev = self._prev_stats = None  # rates restart from the next good scrape
            return Sample(self._clock(), False, f"{self.endpoint.metrics_url}: {_describe(exc)}")
        prev, self._prev = self._prev, cur
        names = self.models or tuple(sorted(set(cur.models) | set(prev.models if prev else ())))
        rows = {name: model_row(prev, cur, name) for name in names}
        try:
            stats = parse_stats(self._fetch(stats_url(self.endpoint.http_url)))
        except Exception as exc:  # noqa: BLE001 - metrics still count without the batch sizes
            self._prev_stats = None
            return Sample(cur.t, True, f"statistics API: {_describe(exc)}", rows)
        before, self._prev_stats = self._prev_stats, stats
        if before is None:
            return Sample(cur.t, True, None, rows)
        times = {n: batch_time_delta(before.get(n), stats[n]) for n in names if n in stats}
        batches = {n: {size: count for size, (count, _) in t.items()} for n, t in times.items()}
        return Sample(cur.t, True, None, rows, batches, times)

    def _row(self, sample: Sample, model: str) -> dict:
        row = sample.rows.get(model)
        if row is None:
            reason = sample.error if not sample.up else f"model {model!r} is not in /metrics (not loaded?)"
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
