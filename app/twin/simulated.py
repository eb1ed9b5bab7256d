"""One simulated run: every request's times and every execution's size, and the figures a window of it gives."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from app.twin.load import Load

UNFINISHED, ANSWERED, REJECTED = 0, 1, 2


@dataclass(frozen=True)
class RunFigures:
    """What a measurement of the run's window would show, for all requests or one class.

    Latencies are client-side (server time plus the client overhead); a request still waiting when the run
    stopped counts with the time it had waited so far, a lower bound, so overload shows instead of hiding.
    """

    offered: int
    answered: int
    rejected: int
    unfinished: int
    throughput_rps: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    queue_ms: float  # mean queue and batching wait of answered requests
    queue_p99_ms: float
    compute_ms: float  # mean execution time of answered requests (contention included)
    mean_batch: float  # executions: Triton's inference_count / execution_count; per class: what its requests rode in
    histogram: tuple[tuple[int, int], ...]  # (batch size, executions), or requests for a class

    @property
    def rejected_share(self) -> float:
        """Return the share of offered requests that were refused or timed out."""
        return self.rejected / self.offered if self.offered else 0.0


@dataclass(frozen=True, eq=False)
class LatencySamples:
    """Latency samples in ms: queue wait and compute of answered requests, total of every request not refused."""

    queue_ms: np.ndarray
    compute_ms: np.ndarray
    total_ms: np.ndarray  # client-side; a request unfinished at the end counts the time it had waited


@dataclass(frozen=True, eq=False)
class Run:
    """Arrays over requests (arrival, class, start, done in s; state; batch it rode in) and over executions."""

    arrival: np.ndarray
    cls: np.ndarray
    start: np.ndarray
    done: np.ndarray
    state: np.ndarray
    batch: np.ndarray
    exec_start: np.ndarray
    exec_size: np.ndarray
    warmup_s: float
    end_s: float
    stop_s: float
    overhead_ms: float  # the mean time outside the server, added to every request's latency
    classes: tuple[str, ...]
    outside_sigma: float = 0.0  # > 0: each request's outside time is lognormal around overhead_ms with this spread
    outside_seed: int = 0

    def with_outside(self, mean_us: float, sigma: float, seed: int) -> Run:
        """Return the run with another time outside the server: it adds to the latencies and changes nothing the
        server did (a closed loop's clients sent at the times the run already holds)."""
        return replace(self, overhead_ms=mean_us / 1e3, outside_sigma=sigma, outside_seed=seed)

    @cached_property
    def _outside_ms(self) -> np.ndarray | float:
        """Return every request's time outside the server, ms (one number when it does not vary)."""
        if not self.outside_sigma:
            return self.overhead_ms
        noise = np.random.default_rng(self.outside_seed).standard_normal(len(self.arrival))
        return self.overhead_ms * np.exp(self.outside_sigma * noise - self.outside_sigma ** 2 / 2)

    def _window(self, cls: int | None) -> np.ndarray:
        pick = (self.arrival >= self.warmup_s) & (self.arrival < self.end_s)
        return pick if cls is None else pick & (self.cls == cls)

    def samples(self, cls: int | None = None) -> LatencySamples:
        """Return the window's latency samples in ms, for every request or one class index."""
        pick = self._window(cls)
        state, arrival = self.state[pick], self.arrival[pick]
        answered = state == ANSWERED
        waited = np.where(answered, self.done[pick], self.stop_s) - arrival
        outside = self._outside_ms
        outside = outside[pick][state != REJECTED] if isinstance(outside, np.ndarray) else outside
        return LatencySamples(queue_ms=(self.start[pick] - arrival)[answered] * 1e3,
                       compute_ms=(self.done[pick] - self.start[pick])[answered] * 1e3,
                       total_ms=waited[state != REJECTED] * 1e3 + outside)

    def throughput_rps(self, cls: int | None = None) -> float:
        """Return the answers per second inside the window, for every request or one class index."""
        inside = (self.state == ANSWERED) & (self.done >= self.warmup_s) & (self.done <= self.end_s)
        if cls is not None:
            inside &= self.cls == cls
        return float(inside.sum() / (self.end_s - self.warmup_s))

    @cached_property
    def _figures(self) -> dict:
        return {}  # figures per class index (None: every request), each computed once: a run does not change

    def figures(self, cls: int | None = None) -> RunFigures:
        """Return the window's figures for every request, or for one class index."""
        if cls not in self._figures:
            self._figures[cls] = self._figures_of(cls)
        return self._figures[cls]

    def _figures_of(self, cls: int | None) -> RunFigures:
        pick, s = self._window(cls), self.samples(cls)
        state = self.state[pick]
        if cls is None:
            sizes = self.exec_size[(self.exec_start >= self.warmup_s) & (self.exec_start < self.end_s)]
        else:
            sizes = self.batch[pick][state == ANSWERED]
        counts = np.bincount(sizes) if len(sizes) else np.zeros(1, int)
        return RunFigures(
            offered=int(pick.sum()), answered=int((state == ANSWERED).sum()), rejected=int((state == REJECTED).sum()),
            unfinished=int((state == UNFINISHED).sum()), throughput_rps=self.throughput_rps(cls),
            mean_ms=_mean(s.total_ms), p50_ms=_quantile(s.total_ms, 0.5), p90_ms=_quantile(s.total_ms, 0.9),
            p99_ms=_quantile(s.total_ms, 0.99), queue_ms=_mean(s.queue_ms), queue_p99_ms=_quantile(s.queue_ms, 0.99),
            compute_ms=_mean(s.compute_ms), mean_batch=_mean(sizes),
            histogram=tuple((int(size), int(n)) for size, n in enumerate(counts) if n))


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else float("nan")


def assemble(load: Load, times, kinds, record, rejected, executions, stop_s: float, overhead_us: float) -> Run:
    """Turn the scheduler's per-level lists and runs of requests into per-request arrays."""
    offsets = np.cumsum([0] + [len(t) for t in times])
    total = int(offsets[-1])
    arrival = np.concatenate([np.asarray(t, float) for t in times]) if total else np.zeros(0)
    cls = np.concatenate([np.asarray(k, int) for k in kinds]) if total else np.zeros(0, int)
    start, done = np.full(total, np.nan), np.full(total, np.nan)
    state, batch = np.zeros(total, np.int8), np.zeros(total, int)
    if record:
        rec = np.asarray(record, float)
        firsts = offsets[rec[:, 0].astype(int)] + rec[:, 1].astype(int)
        lengths = (rec[:, 2] - rec[:, 1]).astype(int)
        index = _spans(firsts, lengths)
        start[index], done[index] = np.repeat(rec[:, 3], lengths), np.repeat(rec[:, 4], lengths)
        batch[index] = np.repeat(rec[:, 5].astype(int), lengths)
        state[index] = np.where(done[index] <= stop_s, ANSWERED, UNFINISHED)
    if rejected:
        rej = np.asarray(rejected, int)
        state[_spans(offsets[rej[:, 0]] + rej[:, 1], rej[:, 2] - rej[:, 1])] = REJECTED
    ex = np.asarray(executions, float).reshape(-1, 2)
    return Run(arrival, cls, start, done, state, batch, ex[:, 0], ex[:, 1].astype(int), load.warmup_s,
               load.duration_s, stop_s, overhead_us / 1e3, tuple(c.name for c in load.classes))


def _spans(firsts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Return the indices of several [first, first + length) spans, concatenated, without a Python loop."""
    keep = lengths > 0
    firsts, lengths = firsts[keep], lengths[keep]
    if not len(lengths):
        return np.zeros(0, int)
    ends = np.cumsum(lengths)
    steps = np.ones(int(ends[-1]), int)
    steps[0] = firsts[0]
    steps[ends[:-1]] = firsts[1:] - (firsts[:-1] + lengths[:-1] - 1)
    return np.cumsum(steps)
