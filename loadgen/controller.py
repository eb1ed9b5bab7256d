"""Background load for the dashboard: one run at a time, in a worker process of its own (loadgen.worker)."""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from loadgen.records import RecordBus, Subscriber
from loadgen.specfile import spec_from_dict, spec_to_dict
from loadgen.spec import LoadSpec
from loadgen.stats import Bucket, Held, WindowedStats, stats_for, window_rows
from loadgen.worker import WorkerProcess, WorkerRun


@dataclass(frozen=True)
class LoadSnapshot:
    """What a viewer needs: state, the spec in force, per-second rows and per-class totals."""

    running: bool
    elapsed_s: float
    spec: LoadSpec | None
    error: str | None
    timeline: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    started_at: float | None = None  # epoch seconds


class LoadController:
    """Start, change, stop and watch one load run; safe to call from many threads (never calls Streamlit).

    The requests go out from a worker process (started at the first run, kept for the next, ended by close());
    its records come back over a pipe into this process's statistics and subscribers.
    """

    def __init__(self, url: str, held: Held | None = None, past_runs: int = 8, grpc_url: str | None = None,
                 worker: WorkerProcess | None = None) -> None:
        self.url = url
        self.grpc_url = grpc_url  # the server's gRPC host:port: decoupled models are driven over its stream
        self.held = held  # tells the statistics which requests waited through a config reload
        self.runs = 0  # how many runs were started: a new number means a new run
        self.worker = worker if worker is not None else WorkerProcess()  # where the requests go out from
        self._lock = threading.RLock()
        self._viewers = RecordBus()  # subscribe()'s subscribers
        self._run: WorkerRun | None = None
        self._stats: WindowedStats | None = None
        self._spec: LoadSpec | None = None
        self._past: deque[tuple[WorkerRun, WindowedStats, LoadSpec]] = deque(maxlen=past_runs)

    @property
    def running(self) -> bool:
        """Return True while a run is going (it ends by itself at its bound)."""
        run = self._run
        return run is not None and run.is_alive()

    @property
    def spec(self) -> LoadSpec | None:
        """Return the spec of the current (or last) run, None before the first."""
        with self._lock:
            return self._spec

    @property
    def started_at(self) -> float | None:
        """Return the wall-clock start (epoch s) of the current run once it sends, else None."""
        run = self._run
        return run.t0_epoch if run is not None and self.running else None

    @property
    def last_started_at(self) -> float | None:
        """Return the wall-clock start (epoch s) of the current or last run (None before the first sends): where a
        trace's played time began, even once it has ended."""
        run = self._run
        return run.t0_epoch if run is not None else None

    def start(self, spec: LoadSpec) -> None:
        """Start a run in the background and return at once; raise RuntimeError if one is going."""
        with self._lock:
            if self.running:
                raise RuntimeError("a load run is already going: stop it first")
            if self._run is not None and self._stats is not None and self._spec is not None:
                self._past.append((self._run, self._stats, self._spec))  # its history stays on the charts
            self._stats = stats = stats_for(spec, self.held)
            self.runs += 1
            self._spec = spec
            self._run = self.worker.start_run(self.url, spec, [stats, self._viewers.deliver], on_start=stats.set_start,
                                              grpc_url=self.grpc_url)

    def update(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the load of the running run now (open loop: rate; closed loop: concurrency)."""
        with self._lock:
            run = self._run
            if run is None or not run.is_alive():
                return
            changes = {k: v for k, v in (("rate", rate), ("concurrency", concurrency)) if v is not None}
            self._spec = dataclasses.replace(self._spec, **changes)
            run.update(rate, concurrency)

    def stop(self, wait: bool = True, timeout_s: float | None = None) -> None:
        """Stop the run: no new requests; with wait, return once requests in flight are done."""
        with self._lock:
            run = self._run
        if run is None:
            return
        run.stop()
        if wait:
            run.join(timeout_s if timeout_s is not None else (self._spec.drain_s if self._spec else 5.0) + 5.0)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the run ends; return True when it has."""
        run = self._run
        if run is not None:
            run.join(timeout_s)
        return not self.running

    def close(self) -> None:
        """Stop the run going and end the worker process (a later start begins a new one)."""
        self.stop()
        self.worker.close()

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call fn(records) for every batch (from the thread reading the worker's pipe); return a function that
        unsubscribes."""
        with self._lock:
            self._viewers.subscribers.append(fn)
        return lambda: self._unsubscribe(fn)

    def snapshot(self, window_s: float = 120.0) -> LoadSnapshot:
        """Return the state, per-second rows of the last window_s seconds (earlier runs too), totals so far.

        Each row carries `models`: the models its run sent to.
        """
        with self._lock:
            run, stats, running = self._run, self._stats, self.running
            spec = self._spec
            error = run.error if run is not None else None
            past = list(self._past)
        if run is None or stats is None:  # no run in this process: only what an earlier one left (restored)
            timeline = _past_rows(past, time.time() - window_s) if window_s > 0 else []
            return LoadSnapshot(False, 0.0, None, None, sorted(timeline, key=lambda r: r["t"]))
        elapsed = run.elapsed_s()
        timeline = _tagged(stats.timeline(window_s, now_s=elapsed if running else None), spec)
        if past and run.t0_epoch is not None and window_s > 0:
            timeline = _past_rows(past, run.t0_epoch + elapsed - window_s) + timeline
        return LoadSnapshot(running, elapsed, spec, error, sorted(timeline, key=lambda r: r["t"]), stats.summary(),
                            run.t0_epoch)

    def export(self, since_epoch: float) -> list[dict]:
        """Return every kept run's per-second buckets from since_epoch on, with its spec (the history store)."""
        out = []
        for run, stats, spec in self._runs():
            if run.t0_epoch is None or run.t0_epoch + run.elapsed_s() < since_epoch:
                continue
            out.append({"t0_epoch": run.t0_epoch, "elapsed_s": run.elapsed_s(), "spec": spec_to_dict(spec),
                        "seconds": stats.export_seconds(since_epoch - run.t0_epoch - 1)})
        return out

    def restore(self, runs: list[dict]) -> int:
        """Keep runs of an earlier dashboard process as past runs (charts and windows); return how many."""
        kept = 0
        for data in sorted(runs, key=lambda r: r["t0_epoch"]):
            spec = spec_from_dict(data["spec"])
            stats = stats_for(spec)
            stats.set_start(data["t0_epoch"])
            stats.restore_seconds(data["seconds"], data["elapsed_s"])
            with self._lock:
                self._past.append((_Restored(data["t0_epoch"], data["elapsed_s"]), stats, spec))
            kept += 1
        return kept

    def reset_stats(self) -> bool:
        """Start the running (or last) run's statistics again from now; False when there is no run."""
        with self._lock:
            run, stats = self._run, self._stats
        if run is None or stats is None or run.t0_epoch is None:
            return False
        stats.reset(run.elapsed_s())
        return True

    def window(self, t0: float, t1: float, include_held: bool = True, model: str | None = None) -> dict:
        """Return per-class figures over the whole seconds inside [t0, t1) (epoch s), across runs.

        model: only runs that sent to it. Each row says its `seconds` and `span` (epoch) covered.
        """
        merged, seconds, first, last = self.buckets(t0, t1, model)
        if first is None:
            return {}
        out = window_rows(merged, seconds, include_held)
        for row in out.values():
            row["span"] = (first, last)
        return out

    def buckets(self, t0: float, t1: float, model: str | None = None) -> tuple[dict[str, Bucket], float,
                                                                              float | None, float | None]:
        """Return (per-class buckets merged over the whole seconds inside [t0, t1), how many seconds they cover, the
        first second's start, the last one's end) across the kept runs (model: only runs that sent to it).

        A run covers its seconds from its start to its last answer (an ended run) or to now (the running one); the
        seconds covered are the union over the runs (two runs share at most the second where one ended and the
        next began), so a rate divides by the time traffic ran inside the window, never by seconds of a run that
        had already ended.
        """
        merged: dict[str, Bucket] = {}
        spans: list[tuple[float, float]] = []
        for run, stats, spec in self._runs():
            if run.t0_epoch is None or (model is not None and model not in spec.targets()):
                continue
            ran_s = math.ceil(max(run.elapsed_s(), stats.end_s))  # an ended run: its last answer's second included
            buckets, n = stats.buckets(t0 - run.t0_epoch, min(t1 - run.t0_epoch, ran_s))
            if not n:
                continue
            for cls, bucket in buckets.items():
                merged.setdefault(cls, Bucket()).merge(bucket)
            start = run.t0_epoch + max(0, math.ceil(t0 - run.t0_epoch))
            spans.append((start, start + n))
        if not spans:
            return merged, 0, None, None
        return merged, _union_length(spans), min(a for a, _ in spans), max(b for _, b in spans)

    def _runs(self) -> list[tuple]:
        """Return (run, stats, spec) of every kept run, oldest first, the current one last."""
        with self._lock:
            return [*self._past, (self._run, self._stats, self._spec)] if self._run is not None else list(self._past)

    def _unsubscribe(self, fn: Subscriber) -> None:
        with self._lock:
            if fn in self._viewers.subscribers:
                self._viewers.subscribers.remove(fn)


def _union_length(spans: list[tuple[float, float]]) -> float:
    """Return how long the union of [start, end) spans is."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _past_rows(past: list, since: float) -> list[dict]:
    """Return the per-second rows of earlier runs from since (epoch) on."""
    out = []
    for old_run, old_stats, old_spec in past:
        if old_run.t0_epoch is None or old_run.t0_epoch + old_run.elapsed_s() < since:
            continue
        rows = old_stats.timeline(old_run.elapsed_s() + 1 - (since - old_run.t0_epoch), None)
        out += [r for r in _tagged(rows, old_spec) if r["t"] >= since]
    return out


def _tagged(rows: list[dict], spec: LoadSpec) -> list[dict]:
    targets = spec.targets()
    for row in rows:
        row["models"] = targets
    return rows


@dataclasses.dataclass(frozen=True)
class _Restored:
    """A run of an earlier dashboard process: only its start and length are known."""

    t0_epoch: float
    length_s: float

    def elapsed_s(self) -> float:
        return self.length_s
