"""Sweep: search configurations × loads on the live server by hot reload, to the SLA operating point.

Each configuration is applied through the lab (validated, hot-reloaded, verified, marked; never a
restart). Traffic keeps running; after a reload or a load change a warm-up is thrown away, then a
point is measured in short windows with exact edges (meter.Meter) until adding a window moves its
merged p99 and throughput by no more than the tolerance — or the window limit comes first, and the
point says it never settled. Every finished point is stored at once, so a cancelled, crashed or
interrupted sweep resumes without measuring a finished point again.

Grid search measures every point. Adaptive search assumes what a closed (or open) loop shows on a
batching server: p99 and throughput do not fall as load rises. Per configuration it bisects the load
levels for the highest one inside the SLA, and stops a configuration as soon as an upper bound on its
throughput inside the SLA cannot beat the best point found (bound: throughput at the first load over
the budget; or, while every measured load is inside it, throughput scaled by the load ratio for a
closed loop and the top rate for an open loop; times a 10 % margin for noise).

Configurations are told apart by the config they serve (space.SearchSpace.configurations): one offered
twice is measured once, and the starting config under its own name. Before the sweep names an operating
point its top candidates are measured again, interleaved, and the recommendation rests on every
measurement (recommend.py); repeats are stored too, so a resumed sweep does not measure them again.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config.errors import ConfigError
from app.config.model_config import parse_config
from app.config.read import settings_of
from app.experiments.driving import Cancelled, Failed, Progress, Start, StudyDriver
from app.experiments.report.environment import environment
from app.timeline.meter import MeasuredWindow, Meter, merged, steady
from app.experiments.sweep.points import Point, point_key
from app.experiments.sweep.recommend import Recommendation, candidates, operating_point, pooled, recommend
from app.experiments.probe import probe
from app.experiments.sweep.search import AdaptiveSearch, GridSearch
from app.experiments.sweep.twin_rank import TIE, Ranked, TwinSearch, kept, rank
from app.experiments.sweep.space import CONCURRENCY, Choice, SearchSpace
from app.twin.batcher import instance_count, unmodelled
from app.store.database import DONE, FAILED, RUNNING, Experiment, Study, owner_tag
from app.lab.ports import StudyLab
from app.metrics.catalog import MIN_SAMPLES
from loadgen.behind import sent_behind
from loadgen.limits import check_finite
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.specfile import spec_to_dict
from loadgen.stats import slas_of
from app.lab.jobs import FunctionJob
from app.text_limits import check_label

REPEAT = "repeat"  # the stored kind of a point's re-measurement (its first measurement is a 'point')
DRAIN_LIMIT_S = 30.0  # the longest a point waits for the queue an earlier point left behind


@dataclass(frozen=True)
class SweepOptions:
    """How each point is measured."""

    window_s: float = 0.5
    warmup_reload_s: float = 0.3
    warmup_load_s: float = 0.2
    tolerance: float = 0.05  # a point is settled when one more window moves p99 and throughput by at most this
    min_samples: int = MIN_SAMPLES  # the catalog's floor for a percentile worth showing
    max_windows: int = 12
    seed: int = 1
    restore: bool = True  # serve the starting config again at the end
    recheck_top: int = 3  # how many top candidates are measured again before an operating point is named (0: none)
    recheck_rounds: int = 1  # how many times each (interleaved: A B C, A B C)
    twin_top: int = 0  # > 0: the twin ranks every configuration and only the top ones are measured (twin_rank.py)

    def __post_init__(self):
        check_finite(self, "sweep options")
        if not 0 <= self.twin_top <= 20:
            raise ValueError(f"sweep options: twin_top must be 0-20, got {self.twin_top}")
        if not 0 <= self.recheck_top <= 10 or not 1 <= self.recheck_rounds <= 5:
            raise ValueError(f"sweep options: recheck_top must be 0-10 and recheck_rounds 1-5, got {self.recheck_top} "
                             f"and {self.recheck_rounds}")
        if not 0.05 <= self.window_s <= 60 or not 1 <= self.max_windows <= 100:
            raise ValueError(f"sweep options: window_s must be 0.05-60 s and max_windows 1-100, got {self.window_s:g} "
                             f"and {self.max_windows}")
        if not (0 <= self.warmup_reload_s <= 60 and 0 <= self.warmup_load_s <= 60 and 0 < self.tolerance <= 1):
            raise ValueError("sweep options: warm-ups must be 0-60 s and the tolerance in (0, 1]")


@dataclass
class SweepProgress(Progress):
    """A sweep's progress, with the points measured so far (they land on the page's chart)."""

    points: list[Point] = field(default_factory=list)


@dataclass
class SweepResult:
    """A finished (or stopped) sweep."""

    study_id: int
    space: SearchSpace
    points: list[Point]
    status: str
    wall_s: float
    note: str = ""
    skipped: list[str] = field(default_factory=list)
    recommendation: Recommendation | None = None  # the operating point, its margin and whether it is clear

    @property
    def best(self) -> Point | None:
        """Return the SLA operating point (recommend.operating_point): the highest goodput whose p99 holds the budget
        with room, else the highest on its edge (every measurement pooled)."""
        return operating_point(self.space, self.points)

    def pareto(self) -> list[Point]:
        """Return the points no other point beats on both throughput and p99."""
        return pareto(self.points)


def pareto(points: list[Point]) -> list[Point]:
    """Return the measured points not dominated in (higher throughput, lower p99), by throughput."""
    done = [p for p in points if p.status == DONE and p.throughput is not None and p.p99 is not None]
    front = [p for p in done if not any(
        q.throughput >= p.throughput and q.p99 <= p.p99 and (q.throughput > p.throughput or q.p99 < p.p99)
        for q in done)]
    return sorted(front, key=lambda p: p.throughput)


def teardown_order(points: list[Point], serving: Choice | None, instances: Callable[[Choice], int]) -> list[Point]:
    """Return one round of re-measurements in the order that removes the fewest instances: the configuration serving
    now first (no reload), then the most instances first. Triton's Python backend takes about a second to remove an
    instance, one after another, and the reload that removes them in place waits for it (StubLauncher::UpdateHealth
    sleeps 1 s before a stub is finalized; a reload from 4 instances to 2 took 2.5 s, one adding instances 0.1 s): a
    round of 3, 4 and 2 instances after the first pass ended on 4 took 3.6 s in reloads, 4, 3, 2 took 2.7 s. Points
    of one instance count keep their order (the best first)."""
    return sorted(points, key=lambda p: (p.choice != serving, -instances(p.choice)))


def traffic_spec(space: SearchSpace, load: float, seed: int) -> LoadSpec:
    """Return the load a sweep point runs: one class whose SLA is the p99 budget (its goodput counts it)."""
    cls = TrafficClass(sla_ms=space.p99_budget_ms, timeout_ms=max(5000.0, 20 * space.p99_budget_ms))
    if space.load_kind == CONCURRENCY:
        return LoadSpec(mode=Mode.CLOSED, concurrency=int(load), duration_s=None, model=space.model,
                        classes=(cls,), seed=seed, drain_s=2.0)
    return LoadSpec(mode=Mode.OPEN, rate=float(load), duration_s=None, model=space.model, classes=(cls,),
                    seed=seed, drain_s=2.0)


def run_sweep(lab: StudyLab, space: SearchSpace | None = None, *, label: str = "", options: SweepOptions | None = None,
              study_id: int | None = None, progress: Callable[[SweepProgress], None] | None = None,
              cancel: threading.Event | None = None) -> SweepResult:
    """Run (or resume, given study_id) a sweep on the lab's server; return its result. Blocks."""
    store = lab
    started = time.monotonic()
    if study_id is None:
        if space is None:
            raise ValueError("a new sweep needs a search space")
        options = options or SweepOptions()
        start = Start.now(lab, space.model)
        study_id = store.add_study(Study(
            "sweep", label.strip() or f"sweep of {space.model}", space.model,
            {"space": space.to_dict(), "options": dataclasses.asdict(options), "start": start.to_dict()},
            time.time(), base_config=start.text, env=environment(lab, space.model)))
        done: dict[str, Point] = {}
        repeats: dict[str, list[Point]] = {}
    else:
        study = store.study(study_id)
        if study.kind != "sweep":
            raise ValueError(f"study {study_id} is not a sweep")
        if study.status == DONE:
            raise ValueError(f"sweep {study_id} has finished: nothing to resume")
        space = SearchSpace.from_dict(study.definition["space"])
        options = SweepOptions(**study.definition.get("options", {}))
        start = Start.of(study)
        done = {p.key: p for p in load_points(store, study_id)}
        repeats = load_repeats(store, study_id)
        store.update_study(study_id, status=RUNNING, owner=owner_tag(), note="")
    sweeper = _Sweeper(lab, space, options, start, study_id, done, progress, cancel or threading.Event(), repeats)
    status, note = sweeper.conclude(sweeper.run, start.text, start.had_file)
    points = [pooled(p, sweeper.repeats.get(p.key, [])) for p in sweeper.points()]
    advice = recommend(space, points)
    result = SweepResult(study_id, space, points, status, time.monotonic() - started, note, sweeper.skipped, advice)
    best = result.best
    store.update_study(study_id, status=status, note=note, result={
        "best": best.key if best else None, "points": len(result.points), "skipped": result.skipped,
        "wall_s": result.wall_s, "rechecked": sweeper.rechecked,
        "repeats": sum(len(r) for r in sweeper.repeats.values()),
        "twin": [{**r.to_dict(), "measured": r.choice.key in sweeper.twin_kept,
                  **measured_operating_point(space, points, r.choice.key)} for r in sweeper.ranking],
        "recommendation": advice.to_dict() if advice else None})
    sweeper.report(final=True)
    return result


def measured_operating_point(space: SearchSpace, points: list[Point], key: str) -> dict:
    """Return where a configuration's measurements put its operating point (the one rule, recommend.operating_point,
    over its own points) — its load, goodput and p99 — to set beside what the twin predicted ({} when none is inside
    the budget or none ran): the twin's first pick could measure last and no table said so (2026-12-07)."""
    best = operating_point(space, [p for p in points if p.choice.key == key])
    if best is None:
        return {}
    return {"measured_load": best.load, "measured_goodput_rps": round(best.goodput, 1),
            "measured_p99_ms": round(best.p99, 2)}


def load_points(store, study_id: int, problems: list[str] | None = None) -> list[Point]:
    """Return a study's stored points that can be read, in the order they were measured; a point that cannot be
    read is left out (never raised), and what is wrong with it appended to problems when given."""
    out = []
    for e in store.runs(study_id=study_id):
        if e.kind != "point" or e.status not in (DONE, FAILED):
            continue
        try:
            out.append(stored_point(e))
        except ValueError as exc:
            if problems is not None:
                problems.append(f"point {e.point or '(unnamed)'!r} (run {e.id}) cannot be read: {exc}")
    return out


def stored_point(e: Experiment) -> Point:
    """Return the point a stored run holds; ValueError saying what is wrong when it cannot be read whole."""
    if e.broken:
        raise ValueError(e.broken)
    choice_key, at, load_text = e.point.rpartition("@")
    if not at:
        raise ValueError("its name has no '@<load>'")
    try:
        choice = Choice.from_key(choice_key)
    except (ValueError, IndexError, TypeError):
        raise ValueError(f"{choice_key!r} names no configuration") from None
    try:
        load = float(load_text)
    except ValueError:
        raise ValueError(f"its load {load_text!r} is not a number") from None
    if not math.isfinite(load) or load <= 0:
        raise ValueError(f"its load {load_text!r} is not above 0")
    change = e.outcome.get("change")  # stored None when it was infinite (JSON has no infinity)
    if change is not None and (isinstance(change, bool) or not isinstance(change, (int, float))):
        raise ValueError(f"its outcome's change {change!r} is not a number")
    note = e.outcome.get("note") or ""
    return Point(choice, load, e.status, bool(e.outcome.get("stable")), math.inf if change is None else float(change),
                 e.window(), e.windows, note if isinstance(note, str) else str(note),
                 e.config_text, e.id, e.started_at, e.ended_at)


def load_repeats(store, study_id: int, problems: list[str] | None = None) -> dict[str, list[Point]]:
    """Return a study's stored re-measurements by point key, in the order they were measured; one that cannot be
    read is left out (never raised), what is wrong with it appended to problems when given."""
    out: dict[str, list[Point]] = {}
    for e in store.runs(study_id=study_id):
        if e.kind != REPEAT or e.status != DONE:
            continue
        try:
            point = stored_point(e)
        except ValueError as exc:
            if problems is not None:
                problems.append(f"a repeat of {e.point or '(unnamed)'!r} (run {e.id}) cannot be read: {exc}")
            continue
        out.setdefault(point.key, []).append(point)
    return out


def with_repeats(store, study_id: int, points: list[Point], problems: list[str] | None = None) -> list[Point]:
    """Return points with their stored repeats pooled in (what the sweep's recommendation rests on)."""
    repeats = load_repeats(store, study_id, problems)
    return [pooled(p, repeats.get(p.key, [])) for p in points]


class _Sweeper(StudyDriver):
    """The search loop of one sweep (see the module docstring)."""

    what, kept = "sweep", "points"

    def __init__(self, lab: StudyLab, space: SearchSpace, options: SweepOptions, start: Start, study_id: int,
                 done: dict[str, Point], progress, cancel: threading.Event,
                 repeats: dict[str, list[Point]] | None = None) -> None:
        super().__init__(lab, space.model, study_id, cancel, progress)
        self.space, self.options = space, options
        self.base = parse_config(start.served)  # knobs move the served config: the user's text may say little
        self.done = done  # stored points by key: never measured again
        self.repeats: dict[str, list[Point]] = dict(repeats or {})  # stored re-measurements by key: not again either
        self.rechecked: list[str] = []  # the points measured again before the operating point was named
        self.repeats_left: int | None = None  # while re-measuring: how many are still to come
        self.measured: list[Point] = []  # this session's points, in order
        self.failed: set[str] = {p.choice.key for p in done.values() if p.status == FAILED}
        self.skipped: list[str] = []
        self.serving: Choice | None = None  # what this sweep last applied
        self.load_now: float | None = None
        self.meter: Meter | None = None
        self.remaining_configs = 0
        self.state = SweepProgress(study_id, done=len(done), points=list(done.values()))
        self.ranking: list[Ranked] = []  # the twin's, when it chose what to measure
        self.twin_kept: set[str] = set()  # the keys of the configurations it chose

    # --- the search -------------------------------------------------------------------------------------
    def run(self) -> None:
        choices = self.space.configurations(self.base)  # one per config served: never the same one twice
        self.lab.stop_traffic("traffic stopped: a sweep takes over")
        starts = self._twin_choices(choices) if self.options.twin_top else {}
        if starts:
            choices = [c for c in choices if c.key in starts]
        self.meter = self.lab.meter(self.model,
                           slas_of(traffic_spec(self.space, self.space.loads[0], self.options.seed)))
        try:
            for i, choice in enumerate(choices):
                self.remaining_configs = len(choices) - i - 1
                if choice.key in self.failed:
                    continue
                if choice.start:  # the starting config comes last: alone it is no sweep
                    self._check_some_apply(choices)
                search = (TwinSearch(self.space, starts[choice.key]) if starts else
                          AdaptiveSearch(self.space, choice.label, lambda: operating_point(self.space, self.points()))
                          if self.space.adaptive else GridSearch(self.space.loads))
                while (load := search.next()) is not None:
                    search.record(self._measure(choice, load))
                if search.skipped:
                    self.skipped.append(search.skipped)
                    self._log(search.skipped)
            self._check_some_apply(choices)
            self._recheck()
        finally:
            self.meter.close()

    def _twin_choices(self, choices: list[Choice]) -> dict[str, float | None]:
        """Return the configurations the twin ranks highest, each with the load to start measuring it at; the rest
        are skipped with the twin's reason (a probe of a few seconds first when it has not seen the model run);
        none, every configuration measured, for a model the twin does not model."""
        why = unmodelled(self.model, self.base)
        if why:
            self._log(f"the twin does not rank this sweep: {why}. Every configuration is measured")
            return {}
        calibration = self.lab.calibration(self.model)
        if calibration is None:
            self._log("the twin has not seen the model execute: a probe of a few seconds calibrates it first")
            calibration = probe(self.lab, self.model, cancel=self.cancel)
        if calibration is None:
            raise Failed(f"the twin could not be calibrated on {self.model}: the probe saw too few executions")
        self.ranking = rank(self.space, choices, self.base, calibration,
                            lambda load: traffic_spec(self.space, load, self.options.seed))
        top = self.options.twin_top
        keep = kept(self.ranking, top)
        self.twin_kept = {r.choice.key for r in keep}
        for place, r in enumerate(self.ranking, 1):
            if r not in keep:
                self.skipped.append(f"{r.choice.label}: not measured — the twin ranks it #{place} of "
                                    f"{len(self.ranking)}" + (f" ({r.note})" if r.note else
                                    f", {r.goodput:,.0f} req/s predicted inside the SLA with room at "
                                    f"{self._load_text(r.load)}" if r.load else
                                    ", no load predicted inside the SLA with room"))
        ties = f" and {len(keep) - top} it cannot tell from them (within {TIE:.0%})" if len(keep) > top else ""
        self._log("the twin's ranking: " + "; ".join(
            f"{r.choice.label}: {r.goodput:,.0f} req/s at {self._load_text(r.load)}" if r.load else
            f"{r.choice.label}: none inside the SLA with room" for r in self.ranking)
            + f" — measuring the top {min(len(keep), top)}{ties}")
        return {r.choice.key: r.load for r in keep}

    def _check_some_apply(self, choices: list[Choice]) -> None:
        """Raise Failed, with the reasons, when no configuration that moves a knob could be applied (the starting
        config counts when it was offered by its knob values, not only as the default)."""
        tried = [c for c in choices if not c.start]
        if not tried or any(c.key not in self.failed for c in tried) or self.space.offers_start(self.base):
            return
        notes = [p.note for p in self.points() if p.status == FAILED]
        reasons = list(dict.fromkeys(n.removeprefix("could not be applied: ") for n in notes))
        raise Failed(f"none of the {len(tried)} configurations could be applied to {self.model}: "
                     + " | ".join(reasons[:3]))

    def _recheck(self) -> None:
        """Measure the top candidates again, interleaved (A B C, A B C), before an operating point is named."""
        top = teardown_order(candidates(self.space, self.points(), self.options.recheck_top), self.serving,
                             self._instances)
        self.rechecked = [p.key for p in top]
        rounds = range(1, self.options.recheck_rounds + 1)
        self.repeats_left = sum(len(self.repeats.get(p.key, [])) < n for n in rounds for p in top)
        if top:
            self._log("measuring again before naming an operating point: " + "; ".join(
                f"{p.choice.label} at {self._load_text(p.load)}" for p in top))
        for n in rounds:
            for p in top:
                if len(self.repeats.get(p.key, [])) < n:
                    self._measure(p.choice, p.load, repeat=n)

    def _instances(self, choice: Choice) -> int:
        """Return how many instances a choice serves (1 when its config cannot be made: it fails when applied)."""
        try:
            return instance_count(settings_of(self.base if choice.start else choice.config(self.base)))
        except (ConfigError, ValueError):
            return 1

    # --- one point --------------------------------------------------------------------------------------
    def _measure(self, choice: Choice, load: float, repeat: int = 0) -> Point:
        """Measure a point (repeat: its re-measurement number, stored beside the point, not instead of it)."""
        key = point_key(choice, load)
        if key in self.done and not repeat:
            return self.done[key]
        if self.cancel.is_set():
            raise Cancelled
        self.state.current = f"{choice.label} at {self._load_text(load)}" + (" (again)" if repeat else "")
        self.report()
        warm = self.options.warmup_load_s
        if self.serving != choice:
            failed = self._serve(choice, load, repeat)
            if failed is not None:
                return failed
            warm = self.options.warmup_reload_s
        self._drive(load)
        meter = self.meter
        meter.wait_until(time.time() + warm, self.cancel)
        if self.cancel.is_set():
            raise Cancelled
        if self._drained(load):
            meter.wait_until(time.time() + self.options.warmup_load_s, self.cancel)
        edge = meter.edge()
        meter.discard_before(edge.t)
        windows: list[MeasuredWindow] = []
        settled, change = False, math.inf
        while True:
            window, edge = self.next_window(meter, edge, edge.t + self.options.window_s)
            windows.append(window)
            settled, change = steady(windows, self.options.tolerance, self.options.min_samples)
            if settled or len(windows) >= self.options.max_windows:
                break
        whole = merged(windows)
        note = "" if settled else (f"never settled: the last window still moved p99/throughput by "
                                   f"{change:.0%} (limit {self.options.tolerance:.0%}) after {len(windows)} windows")
        point = Point(choice, load, DONE, settled, change, whole.figures(self.model), [w.to_dict() for w in windows],
                      note, self.lab.served_text(self.model), t0=whole.t0, t1=whole.t1)
        return self._keep(point, whole, repeat)

    def _drained(self, load: float) -> bool:
        """Wait until the server's queue is what this load leaves (a backlog of an earlier point is gone).

        An open loop over capacity leaves a queue behind that takes seconds to drain; measuring the next
        point during that drain would charge it with the previous one's backlog. Drained: no more queued
        than the load keeps in flight (closed loop: its concurrency; open loop: its rate × the p99 budget),
        or the queue no longer shrinks over a second (the new point is itself over capacity).
        Return True when it had to wait.
        """
        meter = self.meter
        target = load if self.space.load_kind == CONCURRENCY else max(2.0, load * self.space.p99_budget_ms / 1000)
        edges = [meter.edge()]
        deadline = time.time() + DRAIN_LIMIT_S
        while time.time() < deadline:
            pending = edges[-1].values.pending or 0.0
            second_ago = edges[-5].values.pending or 0.0 if len(edges) >= 5 else None
            if pending <= target or (second_ago is not None and pending >= second_ago - 1):
                return len(edges) > 1
            meter.wait_until(edges[-1].t + 0.25, self.cancel)
            if self.cancel.is_set():
                raise Cancelled
            edges.append(meter.edge())
        self._log(f"the queue was still draining after {DRAIN_LIMIT_S:g} s; measuring anyway")
        return True

    def _serve(self, choice: Choice, load: float, repeat: int = 0) -> Point | None:
        """Hot-reload the choice; return a failed point (stored) when it cannot be applied."""
        try:
            self.serve(self.base if choice.start else choice.config(self.base), f"sweep: {choice.label}")
        except ConfigError as exc:
            self.failed.add(choice.key)
            point = Point(choice, load, FAILED, note=f"could not be applied: {exc}")
            self._log(f"{choice.label}: {point.note}")
            return self._keep(point, None, repeat)  # a repeat refused: stored as such, the first kept
        self.serving = choice
        return None

    def _drive(self, load: float) -> None:
        if not self.lab.traffic().running:
            self.start_traffic(traffic_spec(self.space, load, self.options.seed))
            self.load_now = load
        elif self.load_now != load:
            if self.space.load_kind == CONCURRENCY:
                self.lab.update_traffic(concurrency=int(load))
            else:
                self.lab.update_traffic(rate=float(load))
            self.load_now = load

    def _keep(self, point: Point, whole: MeasuredWindow | None, repeat: int = 0) -> Point:
        figures = point.figures
        again = f" (measurement {repeat + 1})" if repeat else ""
        exp = Experiment(
            f"{point.choice.label} @ {self._load_text(point.load)}{again}", self.model,
            point.config_text or self.lab.served_text(self.model), point.t0, point.t1,
            spec_to_dict(traffic_spec(self.space, point.load, self.options.seed)), figures.client_dicts(),
            figures.server.to_dict(), kind=REPEAT if repeat else "point", status=point.status,
            study_id=self.study_id, point=point.key, seed=self.options.seed, windows=point.windows,
            outcome={"stable": point.stable, "change": point.change if math.isfinite(point.change) else None,
                     "note": point.note, "load": point.load, "load_kind": self.space.load_kind,
                     "choice": point.choice.key, "repeat": repeat},
        )
        point.id = self.lab.add_run(exp)
        if repeat:
            self.repeats.setdefault(point.key, []).append(point)
            self.repeats_left = max(0, (self.repeats_left or 1) - 1)
        else:
            self.done[point.key] = point
            self.measured.append(point)
        self.state.done += 1
        self.state.points = self.points()
        if point.status == DONE:
            self._log(f"{exp.label}: {point.throughput or 0:,.0f} req/s, p99 "
                      f"{point.p99 if point.p99 is not None else float('nan'):,.1f} ms"
                      + ("" if point.stable else " (never settled)")
                      + ("" if point.behind is None
                         else f" (generator behind: {sent_behind(point.behind)})"))
        self.report()
        return point

    def points(self) -> list[Point]:
        """Return every point of the study: stored earlier, then measured now."""
        seen, out = set(), []
        for p in [*self.done.values(), *self.measured]:
            if p.key not in seen:
                seen.add(p.key)
                out.append(p)
        return out

    # --- progress ---------------------------------------------------------------------------------------
    def report(self, final: bool = False) -> None:
        state = self.state
        per_config = math.ceil(math.log2(len(self.space.loads) + 1)) if self.space.adaptive else len(self.space.loads)
        if self.repeats_left is None:  # searching: its configurations, then at most recheck_top repeats a round
            rechecks = min(self.options.recheck_top, len(self.space.choices())) * self.options.recheck_rounds
            left = per_config * (self.remaining_configs + 1) + rechecks
        else:
            left = self.repeats_left + 1
        left = 0 if final else left
        state.total = max(state.done, state.done + left - (1 if state.current and not final else 0))
        self.publish(state, sum(p.status == DONE for p in self.measured), final)

    def _log(self, text: str) -> None:
        self.state.log.append(text)

    def _load_text(self, load: float) -> str:
        return f"concurrency {load:g}" if self.space.load_kind == CONCURRENCY else f"{load:g} req/s"


def sweep_job(lab: StudyLab, space: SearchSpace, label: str = "", options: SweepOptions | None = None) -> FunctionJob:
    """Return the job of a new sweep, for lab.start_job (ValueError for a label too long)."""
    check_label(label, "the sweep's label")
    return FunctionJob("sweep", label or f"sweep of {space.model}", lambda progress, cancel: run_sweep(
        lab, space, label=label, options=options, progress=progress, cancel=cancel))


def resumed_sweep_job(lab: StudyLab, study_id: int) -> FunctionJob:
    """Return the job that resumes a stopped sweep: only the points it has not measured yet."""
    return FunctionJob("sweep", f"sweep {study_id} (resumed)", lambda progress, cancel: run_sweep(
        lab, study_id=study_id, progress=progress, cancel=cancel))
