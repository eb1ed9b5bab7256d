"""What a batching or instance change will do, before it is made: the twin's predictions with intervals.

Each prediction runs the load `replications` times with different seeds on the calibration's cost table, and once
more at each edge of what the calibration allows (costs and contention at the optimistic and pessimistic end, on
the first seed): a figure's interval spans all of them, its value is the median of the plain replications.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, replace
from random import Random

from app.config.settings import ModelSettings
from app.twin.batcher import Batcher, batcher_of
from app.twin.calibration import (HOST_P99_SPREAD, MODEL_CLOSED_RPS_SPREAD, MODEL_LATENCY_SPREAD, Calibration,
                                  Outside, beyond_spread)
from app.twin.host_load import HOST_TIPPING
from app.twin.load import Arrivals, Load
from app.twin.simulated import Run, RunFigures
from app.twin.scheduler import simulate

EDGE_SHARE = 0.01  # batch sizes under 1 % of executions do not sway the confidence statement
BEYOND = 1.1  # a rate this far past the fastest window the clients' tail was seen at is said to lie beyond it
OVERLOADED = 0.95  # an open loop answered under this share of its rate is overloaded: its queue grows all run long
# How far the host's utilisation, fitted to a probe's windows at one instance, misses what a config at that instance
# count then keeps it at: within 0.1 in 11 of 12 readings (mlp and text_len, 2 rates, max_queue_delay 0 and 2000 µs,
# two 5 s windows each; the fit low by 0.04 at the median, 2026-12-07); in bench/twin_accuracy's run AV, at 41 of 48,
# two and three instances included. A prediction this near HOST_TIPPING says the tail may tip over.
HOST_MARGIN = 0.1


@dataclass(frozen=True)
class Interval:
    """A predicted figure: the median of the replications, and the range replications and calibration allow."""

    value: float
    low: float
    high: float

    @classmethod
    def over(cls, nominal: list[float], edges: list[float] = ()) -> Interval:
        """Return the median of nominal values and the range of every value given."""
        every = [v for v in (*nominal, *edges) if v == v]  # NaN (no sample) says nothing
        if not every:
            return cls(float("nan"), float("nan"), float("nan"))
        kept = [v for v in nominal if v == v]
        return cls(statistics.median(kept) if kept else float("nan"), min(every), max(every))

    def __str__(self) -> str:
        return f"{self.value:.4g} [{self.low:.4g}, {self.high:.4g}]"

    def widened(self, factor: float) -> Interval:
        """Return the interval spanning at least factor either side of its value (a ratio: value / factor to value
        x factor)."""
        return Interval(self.value, min(self.low, self.value / factor), max(self.high, self.value * factor))

    def spanning(self, low: float, high: float) -> Interval:
        """Return the interval spanning at least value × low to value × high (ratios)."""
        return Interval(self.value, min(self.low, self.value * low), max(self.high, self.value * high))

    def capped(self, ceiling: float | None) -> Interval:
        """Return the interval with no bound above ceiling (None: as it is)."""
        if ceiling is None:
            return self
        return Interval(min(self.value, ceiling), min(self.low, ceiling), min(self.high, ceiling))


@dataclass(frozen=True)
class ClassPrediction:
    """One traffic class's figures."""

    name: str
    priority: int
    throughput_rps: Interval
    p50_ms: Interval
    p99_ms: Interval
    queue_ms: Interval
    rejected_share: Interval


@dataclass(frozen=True)
class Prediction:
    """What the twin expects a config to do under a load; latencies are client-side when the overhead is known."""

    throughput_rps: Interval
    p50_ms: Interval
    p99_ms: Interval
    queue_ms: Interval  # mean queue and batching wait
    compute_ms: Interval  # mean execution, contention included
    mean_batch: Interval
    rejected_share: Interval
    histogram: tuple[tuple[int, float], ...]  # (batch size, share of executions), pooled over the replications
    classes: tuple[ClassPrediction, ...]
    confidence: str
    lacks: tuple[str, ...]
    replications: int
    overloaded: bool = False  # an open loop the config answers under OVERLOADED of: no steady state (said in lacks)
    host_cpu: float | None = None  # the host's CPU utilisation expected, 0-1, where the host is the limit (HostLoad)


def _runs(cal: Calibration, batcher: Batcher, load: Load, seed: int, replications: int):
    """Return the figures of the plain replications and of the calibration's two edges (empty when exact)."""
    overhead = cal.client_overhead_us or 0.0
    costs = cal.costs(batcher.max_batch)
    plain = [simulate(batcher, costs, load, Random(seed * 1_000_003 + r), overhead) for r in range(replications)]
    edges = []
    lo, hi = cal.costs(batcher.max_batch, -1), cal.costs(batcher.max_batch, 1)
    if lo != costs or hi != costs:
        # The first seed again: the edges then differ from a replication by the calibration alone.
        edges = [simulate(batcher, c, load, Random(seed * 1_000_003), overhead) for c in (lo, hi)]
    return plain, edges


def _with_outside(cal: Calibration, load: Load, seed: int, plain: list[Run], edges: list[Run]):
    """Return the runs with the clients' own time where the host is the limit: spread and all, at the rate the host
    lets through (it adds to the latencies after the fact and changes nothing the server did), and what the
    prediction lacks when that rate lies beyond what was seen. Where the server is the limit, an open loop's mean
    outside time at its rate (Calibration.outside_mean), a closed loop's as simulated (the windows' mean)."""
    open_loop = load.kind != Arrivals.CLOSED
    if cal.host_ceiling is None:
        if not open_loop or not plain:  # a closed loop's clients sent at times its simulated outside time set
            return plain, edges, (), None
        # An open loop sends as it would anyway: its outside time at its own rate changes nothing the server did.
        mean = cal.outside_mean(True, sum(r.throughput_rps() for r in plain) / len(plain))
        return ([r.with_outside(mean, 0.0, 0) for r in plain], [r.with_outside(mean, 0.0, 0) for r in edges],
                (), None)
    rate = min(cal.host_ceiling[0], sum(r.throughput_rps() for r in plain) / len(plain))
    outside = cal.outside(open_loop, rate)
    runs = [r.with_outside(outside.mean_us, outside.sigma, seed * 1_000_003 + i) for i, r in enumerate(plain)]
    return (runs, [r.with_outside(outside.mean_us, outside.sigma, seed * 1_000_003) for r in edges],
            _beyond_reach(cal, open_loop, rate), _calm_edge(cal, open_loop, rate, seed, plain, runs, outside))


def _calm_edge(cal: Calibration, open_loop: bool, rate: float, seed: int, plain: list[Run],
               runs: list[Run], outside: Outside) -> tuple[float, float, str] | None:
    """Return the p99's spread where the host is the limit (Calibration.tail_spread), reaching down as far as the
    p99 the windows whose tail held still give where a window the prediction may rest on did not: a probe that met
    the host in a stall puts its stall on every prediction it interpolates from (text_len, 2026-12-07, run AJ: 7.4 ms
    [5.5, 10.0] predicted at 2,517 req/s from a level at 4,413 whose windows read 11-40 ms, 2.4 measured)."""
    tail = cal.tail_spread(open_loop, rate)
    shaken = cal.unsteady_windows(open_loop)
    calm = cal.outside(open_loop, rate, steady=True) if shaken else None
    if calm is None or calm == outside or not runs:  # no level held still: nothing calmer to give
        return tail
    quiet = [r.with_outside(calm.mean_us, calm.sigma, seed * 1_000_003 + i) for i, r in enumerate(plain)]
    usual = sum(r.figures().p99_ms for r in runs) / len(runs)
    low = sum(r.figures().p99_ms for r in quiet) / len(quiet) / usual if usual > 0 else 1.0
    if (low >= tail[0]) if tail else not beyond_spread(low, 1.0):  # no lower than the interval reaches already
        return tail
    levels = ", ".join(f"{w.client_rps:,.0f}" for w in shaken)
    calm_words = (f"without the windows whose tail moved by more than {HOST_P99_SPREAD:g}× (at {levels} req/s) the "
                  f"p99 would be {low:.2f}× this")
    return (low, tail[1] if tail else 1.0, f"{tail[2]}; {calm_words}" if tail else calm_words)


def _beyond_reach(cal: Calibration, open_loop: bool, rate: float) -> tuple[str, ...]:
    """Return what a host-bound prediction lacks when its rate lies beyond the fastest the clients' tail was seen at
    (a host-bound tail grows with the rate, so one held there may be low); () within it."""
    reach = cal.outside_reach(open_loop)
    if reach is None or rate <= reach * BEYOND:
        return ()
    kind = "an open" if open_loop else "a closed"
    return (f"beyond what was seen: {rate:,.0f} answers/s, where the clients' tail was seen up to {reach:,.0f} in "
            f"{kind} loop — it is held at that, and a host-bound tail grows with the rate, so the p99 may be low",)


def _interval(plain: list[RunFigures], edges: list[RunFigures], name: str) -> Interval:
    return Interval.over([getattr(f, name) for f in plain], [getattr(f, name) for f in edges])


def predict(calibration: Calibration, settings: ModelSettings, load: Load, seed: int = 0,
            replications: int = 5) -> Prediction:
    """Predict throughput, latency, batching and rejections of these settings under this load."""
    if replications < 1:
        raise ValueError(f"replications must be at least 1, got {replications}")
    batcher = batcher_of(settings)
    runs = _runs(calibration, batcher, load, seed, replications)
    plain_runs, edge_runs, outside_lacks, tail = _with_outside(calibration, load, seed, *runs)
    plain, edges = [r.figures() for r in plain_runs], [r.figures() for r in edge_runs]
    pooled = Counter()
    for f in plain:
        pooled.update(dict(f.histogram))
    executions = sum(pooled.values()) or 1
    histogram = tuple((size, n / executions) for size, n in sorted(pooled.items()))
    formed = [size for size, share in histogram if share >= EDGE_SHARE] or [1]
    classes = []
    for i, cls in enumerate(load.classes):
        cp, ce = [r.figures(i) for r in plain_runs], [r.figures(i) for r in edge_runs]
        classes.append(ClassPrediction(cls.name, cls.priority, **{name: _interval(cp, ce, name) for name in (
            "throughput_rps", "p50_ms", "p99_ms", "queue_ms", "rejected_share")}))
    figures = {name: _interval(plain, edges, name) for name in (
        "throughput_rps", "p50_ms", "p99_ms", "queue_ms", "compute_ms", "mean_batch", "rejected_share")}
    # no surer than the twin has been (MODEL_LATENCY_SPREAD)
    classes = _each(figures, classes, ("p50_ms", "p99_ms"), lambda i: i.widened(MODEL_LATENCY_SPREAD))
    if load.kind == Arrivals.CLOSED:
        classes = _each(figures, classes, ("throughput_rps",), lambda i: i.widened(MODEL_CLOSED_RPS_SPREAD))
    ceiling = calibration.host_ceiling
    if ceiling is not None:  # the clients' own time makes the tail: no surer than a measurement of it
        classes = _each(figures, classes, ("p99_ms",), lambda i: i.widened(HOST_P99_SPREAD))
    if tail is not None and beyond_spread(tail[0], tail[1]):
        # The tail the prediction rests on moved further than that from one window to the next: the interval
        # spans as far (text_len at 4,700 req/s: its 1.5 s windows read 2.5-75 ms within a minute, 2026-12-07).
        classes = _each(figures, classes, ("p99_ms",), lambda i: i.spanning(tail[0], tail[1]))
        outside_lacks += (f"an unsteady tail: {tail[2]}; the p99's interval spans as far below and above",)
    host, tipping = _host_busy(calibration, batcher, plain_runs)
    if tipping:
        slowest = max(w.client_p99_us for w in calibration.windows if w.client_p99_us) / 1e3
        classes = _each(figures, classes, ("p99_ms",), lambda i: Interval(i.value, i.low, max(i.high, slowest)))
        outside_lacks += (f"{tipping}; the p99's interval reaches the slowest the calibration's windows saw "
                          f"({slowest:.1f} ms)",)
    if ceiling is not None and figures["throughput_rps"].value > ceiling[0]:
        # Something outside the model's execution answers no faster: every class loses the same share.
        scale = ceiling[0] / figures["throughput_rps"].value
        figures["throughput_rps"] = figures["throughput_rps"].capped(ceiling[0])
        classes = [replace(c, throughput_rps=Interval(c.throughput_rps.value * scale, c.throughput_rps.low * scale,
                                                      c.throughput_rps.high * scale)) for c in classes]
    answered = figures["throughput_rps"].value
    over = _overloaded(load, answered)
    # its lacks say what it lacks then: a steady state (its latencies are those of a run of the load's length, its
    # queue growing all along: 18 s for 300 req/s where 146 were answered, from a 30 s run, looked like a figure to
    # hold, 2026-12-07)
    overload = (f"overloaded: it answers about {answered:,.0f} of the {load.rate_rps:,.0f} req/s offered, and its "
                f"queue grows for as long as the load lasts — the latencies are those of a {load.duration_s:g} s run, "
                "not a steady state",) if over else ()
    return Prediction(**figures, histogram=histogram, classes=tuple(classes),
                      confidence=calibration.confidence(formed, batcher.instances),
                      lacks=calibration.lacks(formed, batcher.instances) + outside_lacks + overload,
                      replications=replications, overloaded=over, host_cpu=host)


def _host_busy(cal: Calibration, batcher: Batcher, plain: list[Run]) -> tuple[float | None, str]:
    """Return the host's CPU utilisation the runs would keep it at where the host is the limit (None elsewhere, or
    where too few windows read it), and, where that lies within HOST_MARGIN of HOST_TIPPING, why the tail may tip
    over ('' where it does not)."""
    load = cal.host_load
    if cal.host_ceiling is None or load is None or not plain:
        return None, ""
    figures = [r.figures() for r in plain]
    answered = sum(f.throughput_rps for f in figures) / len(figures)
    executions = sum(f.throughput_rps / f.mean_batch for f in figures if f.mean_batch == f.mean_batch and f.mean_batch
                     ) / len(figures)  # a run with no execution (NaN batch) executed nothing
    scale = min(1.0, cal.host_ceiling[0] / answered) if answered else 1.0  # the host lets no more through
    host = load.at(answered * scale, executions * scale)
    if host < HOST_TIPPING - HOST_MARGIN:
        return host, ""
    more = (f"; {batcher.instances} instances were never measured, and each adds its own threads or processes to the same CPUs "
            "(not in this figure)" if batcher.instances not in cal.instance_counts else "")
    return host, (f"a host near its tipping point: its CPUs about {host:.0%} busy at this rate and batching "
                  f"({load.note}){more}; past about {HOST_TIPPING:.0%} a host-bound tail tips over in some windows "
                  "and not in others, many times its usual length")


def _each(figures: dict, classes: list[ClassPrediction], names: tuple[str, ...], change) -> list[ClassPrediction]:
    """Change the named intervals of the whole model's figures (in place) and of every class; return the classes."""
    for name in names:
        figures[name] = change(figures[name])
    return [replace(c, **{name: change(getattr(c, name)) for name in names}) for c in classes]


def _overloaded(load: Load, answered: float) -> bool:
    """Return whether an open loop is more than the config answers (under OVERLOADED of its rate)."""
    return load.kind in (Arrivals.POISSON, Arrivals.BURSTY) and bool(load.rate_rps) \
        and answered < OVERLOADED * load.rate_rps


def capacity_bound(calibration: Calibration, settings: ModelSettings) -> float:
    """Return an upper bound on requests/s: the best batch size on every instance, or on the shared device."""
    batcher = batcher_of(settings)
    costs = calibration.costs(batcher.max_batch, -1)
    best = 0.0
    for size in range(1, batcher.max_batch + 1):
        per_instance = size / (costs.service_us(size) * 1e-6)
        device = size / (costs.share[size] * costs.mean_us[size] * 1e-6) if costs.share[size] else float("inf")
        best = max(best, min(batcher.instances * per_instance, device))
    return best


def saturation(calibration: Calibration, settings: ModelSettings, seed: int = 0, replications: int = 3) -> Interval:
    """Return the highest throughput the config sustains: what it answers per second under overload."""
    bound = capacity_bound(calibration, settings)
    batcher = batcher_of(settings)
    slowest = calibration.costs(batcher.max_batch, 1).service_us(batcher.max_batch) * 1e-6
    # Long enough for a few hundred of the slowest executions per instance; a fifth of it fills the queue first.
    duration = max(2.0, 300 * slowest)
    load = Load.poisson(2.0 * bound, duration, warmup_s=0.2 * duration)
    plain, edges = _runs(calibration, batcher, load, seed, replications)
    ceiling = calibration.host_ceiling
    return Interval.over([r.figures().throughput_rps for r in plain], [r.figures().throughput_rps for r in edges]
                         ).capped(ceiling[0] if ceiling else None)
