"""What a sweep recommends: the operating point, confirmed by measuring its top candidates again.

A measurement's spread is how far its windows' goodput ranged: half the range, as a fraction of their
mean — a band of ± that much around its goodput; a point's spread is the widest its measurements showed.
Two figures are told apart only when their bands do not overlap: a gap larger than the sum of their
spreads. Before a sweep names an operating point, the best configuration and the others whose bands
overlap its band (its candidates, the top few) are measured again, interleaved (A B C, after the first
pass measured each once); every measurement of a point is then pooled — answers merged, counters summed,
over the time actually measured — and the one rule (operating_point: the most goodput inside the SLA)
picks from the pooled points. The recommendation states its margin over the best other configuration and
whether it exceeds what the spreads allow. A point whose measurements lie further apart than their bands
allow is marked, and is never named alone. A point on the budget's edge (SearchSpace.sla_state: inside the budget,
but within its headroom) is named only when no point holds the budget with room, and then not alone; one passed over
for its edge is said in the sentence.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from app.timeline.meter import MeasuredWindow, merged
from app.store.database import DONE
from app.metrics.catalog import fmt
from app.timeline.figures import Figures
from app.experiments.sweep.space import EDGE, INSIDE

if TYPE_CHECKING:
    from app.experiments.sweep.points import Point
    from app.experiments.sweep.space import SearchSpace

T = TypeVar("T")
CLEAR, TIED, DISAGREE, ONLY, ONCE = "clear", "within the spread", "repeats disagree", "only one", "measured once"
ON_EDGE = "on the budget's edge"


def operating_point(space: SearchSpace, points: list[Point]) -> Point | None:
    """Return the measured point with the highest goodput among those inside the SLA with room; when none has room,
    among those on its edge (None when no point is inside the budget)."""
    return best_inside([p for p in points if p.status == DONE], _figures, lambda p: _state(space, p))


def _state(space: SearchSpace, point: Point) -> str:
    return space.sla_state(point.p99, point.throughput)


def _figures(point: Point) -> tuple[float | None, float | None]:
    return point.goodput, point.throughput


def best_inside(candidates: list[T], figures: Callable[[T], tuple[float | None, float | None]],
                state: Callable[[T], str]) -> T | None:
    """THE operating-point rule, for sweeps and scenarios alike: among the candidates inside the SLA with room
    (state: space.sla_state), the one with the highest goodput, throughput breaking ties (a figure not measured
    counts as 0); when none has room, the same among those on the budget's edge; None when none is inside."""
    for wanted in (INSIDE, EDGE):
        best = max((c for c in candidates if state(c) == wanted), key=lambda c: _rank(figures(c)), default=None)
        if best is not None:
            return best
    return None


def _rank(figures: tuple[float | None, ...]) -> tuple[float, ...]:
    return tuple(v or 0.0 for v in figures)


def _pct(fraction: float) -> str:
    """Return a fraction as shown beside figures, e.g. '6 %' (one decimal under 10 %)."""
    value = abs(fraction) * 100
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"


# --- one measurement and its spread ------------------------------------------------------------------------
def _windows(data: list[dict]) -> list[MeasuredWindow]:
    """Return the stored windows that can be read back (a broken one is left out, never fatal)."""
    out = []
    for w in data or []:
        try:
            out.append(MeasuredWindow.from_dict(w))
        except Exception:  # noqa: BLE001 - any shape of damage: that window is left out, the rest still count
            continue
    return out


def _goodput(window: MeasuredWindow) -> float | None:
    value = window.figures().get("goodput_rps")
    return float(value) if value is not None else None


def pooled_figures(windows: list[MeasuredWindow], model: str = "") -> Figures:
    """Return the figures of windows measured at different times: answers merged, counters summed, rates over the
    seconds measured (not the time between the first and the last)."""
    whole = merged(windows)
    whole.t1 = whole.t0 + sum(w.seconds for w in windows)
    return whole.figures(model)


def spread_of(windows: list[dict]) -> float | None:
    """Return half the range of the windows' goodput as a fraction of their mean (None with under two windows)."""
    values = [g for g in (_goodput(w) for w in _windows(windows)) if g is not None]
    mean = sum(values) / len(values) if values else 0.0
    if len(values) < 2 or mean <= 0:
        return None
    return (max(values) - min(values)) / 2 / mean


@dataclass(frozen=True)
class Measurement:
    """One measurement of a point: its goodput and its windows' spread."""

    goodput: float | None
    spread: float | None
    windows: int
    t0: float | None = None


def measurements(point: Point) -> list[Measurement]:
    """Return every measurement of a point: the first, then its repeats."""
    out = []
    for p in (point, *point.repeats):
        windows = _windows(p.windows)
        goodput = _goodput(merged(windows)) if windows else p.get("goodput_rps")
        out.append(Measurement(goodput, spread_of(p.windows), len(windows), p.t0))
    return out


def spread(point: Point) -> float | None:
    """Return the largest spread any measurement of the point showed; a point whose measurements disagree is known
    only as well as they agree (half their range)."""
    seen = [m.spread for m in measurements(point) if m.spread is not None]
    if point.marked:
        seen.append((disagreement(point) or 0.0) / 2)
    return max(seen) if seen else None


def disagreement(point: Point) -> float | None:
    """Return how far the point's measurements' goodput lay apart, as a fraction of their mean (None: once)."""
    values = [m.goodput for m in measurements(point) if m.goodput is not None]
    mean = sum(values) / len(values) if values else 0.0
    return (max(values) - min(values)) / mean if len(values) > 1 and mean > 0 else None


def allowed_gap(point: Point) -> float | None:
    """Return how far apart the point's measurements may lie while their bands overlap: twice the widest spread any
    of them showed (a few windows' range understates the noise; the widest is the best estimate). None: once."""
    each = measurements(point)
    seen = [m.spread for m in each if m.spread is not None]
    return 2 * max(seen) if len(each) > 1 and seen else None


def pooled(point: Point, repeats: list[Point]) -> Point:
    """Return the point with its repeats: figures pooled over every measurement, its note saying what they showed,
    marked when they disagree by more than their spread."""
    repeats = [r for r in repeats if r.status == DONE]
    if point.status != DONE or not repeats:
        return point
    windows = _windows(point.windows) + [w for r in repeats for w in _windows(r.windows)]
    if not windows:
        return point
    out = dataclasses.replace(point, figures=pooled_figures(windows, point.figures.model), repeats=list(repeats),
                              stable=point.stable and all(r.stable for r in repeats))
    gap, allowed = disagreement(out), allowed_gap(out)
    values = _listed([fmt("goodput_rps", m.goodput, unit=False) for m in measurements(out)])
    said = f"measured {len(repeats) + 1}×: {values} req/s goodput"
    if gap is not None and allowed is not None and gap > allowed:
        out.marked = (f"its {len(repeats) + 1} measurements disagree ({values} req/s goodput: {_pct(gap)} apart, "
                      f"more than the ±{_pct(allowed / 2)} bands of its windows allow)")
        said += f" — they disagree ({_pct(gap)} apart; the spread allows {_pct(allowed)})"
    elif gap is not None:
        said += f" — they agree ({_pct(gap)} apart" + (f"; the spread allows {_pct(allowed)})" if allowed else ")")
    out.note = f"{point.note}; {said}" if point.note else said
    return out


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# --- who is measured again ---------------------------------------------------------------------------------
def best_per_configuration(space: SearchSpace, points: list[Point]) -> list[Point]:
    """Return each configuration's operating point (the rule over its own points), the best first: those with room
    before those on the budget's edge."""
    keys = dict.fromkeys(p.choice.key for p in points)
    tops = [operating_point(space, [p for p in points if p.choice.key == k]) for k in keys]
    return sorted((p for p in tops if p is not None),
                  key=lambda p: (_state(space, p) == INSIDE, *_rank(_figures(p))), reverse=True)


def within_noise(a: Point, b: Point) -> bool:
    """Return True when a's goodput lies above b's by no more than the sum of their spreads (their bands overlap)."""
    ga, gb = a.goodput or 0.0, b.goodput or 0.0
    if gb <= 0:
        return ga <= 0
    return (ga - gb) / gb <= (spread(a) or 0.0) + (spread(b) or 0.0)


def candidates(space: SearchSpace, points: list[Point], top: int) -> list[Point]:
    """Return the points to measure again: the operating point and the other configurations' best points within
    the noise of it and as far inside the budget (both with room, or both on its edge), at most `top` of them, the
    best first (none when top is 0 or no point is inside the SLA)."""
    ranked = best_per_configuration(space, points)
    if top < 1 or not ranked:
        return []
    state = _state(space, ranked[0])
    return [ranked[0], *(p for p in ranked[1:] if _state(space, p) == state and within_noise(ranked[0], p))][:top]


# --- the recommendation ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recommendation:
    """The operating point, the best other configuration, the margin between them, and how sure it is."""

    best: Point
    runner_up: Point | None
    margin: float | None  # the best's goodput above the runner-up's, as a fraction of the runner-up's
    spreads: tuple[float | None, float | None]  # the best's and the runner-up's (± fractions)
    verdict: str  # clear / within the spread / repeats disagree / on the budget's edge / only one / measured once
    text: str
    passed_over: Point | None = None  # the point with more goodput left out for lying on the budget's edge

    @property
    def allowed(self) -> float | None:
        """Return the gap the two spreads allow as noise (their sum; None when neither is known)."""
        known = [s for s in self.spreads if s is not None]
        return sum(known) if known else None

    @property
    def named(self) -> list[str]:
        """Return the configurations the recommendation names: one when it is clear."""
        alone = self.verdict in (CLEAR, ONLY) or self.runner_up is None
        return [self.best.choice.label] + ([] if alone else [self.runner_up.choice.label])

    def to_dict(self) -> dict:
        """Return JSON-ready values (stored in the study's result)."""
        return {"best": self.best.key, "runner_up": self.runner_up.key if self.runner_up else None,
                "margin": self.margin, "spreads": list(self.spreads), "allowed": self.allowed,
                "verdict": self.verdict, "text": self.text, "named": self.named,
                "measured": len(self.best.repeats) + 1,
                "passed_over": self.passed_over.key if self.passed_over is not None else None}


def recommend(space: SearchSpace, points: list[Point]) -> Recommendation | None:
    """Return what the sweep recommends from its (pooled) points; None when no point is inside the SLA."""
    ranked = best_per_configuration(space, points)
    if not ranked:
        return None
    best = ranked[0]
    # the runner-up is as far inside the budget as the best: a point on the edge is passed over, not weighed
    runner = next((p for p in ranked[1:] if _state(space, p) == _state(space, best)), None)
    margin = None
    if runner is not None and runner.goodput:
        margin = ((best.goodput or 0.0) - runner.goodput) / runner.goodput
    spreads = (spread(best), spread(runner) if runner is not None else None)
    allowed = sum(x for x in spreads if x is not None)
    if best.marked:
        verdict = DISAGREE
    elif _state(space, best) == EDGE:
        verdict = ON_EDGE
    elif not best.repeats:
        verdict = ONCE
    elif runner is None:
        verdict = ONLY
    elif margin is not None and margin > allowed:
        verdict = CLEAR
    else:
        verdict = TIED
    edge = [p for p in points
            if p.status == DONE and _state(space, p) == EDGE and _rank(_figures(p)) > _rank(_figures(best))]
    advice = Recommendation(best, runner, margin, spreads, verdict, "",
                            max(edge, key=lambda p: _rank(_figures(p)), default=None))
    text = _text(space, advice)
    if advice.passed_over is not None:
        text += f" {_passed_over(space, advice.passed_over)}"
    return dataclasses.replace(advice, text=text)


def _load(space: SearchSpace, load: float) -> str:
    return f"concurrency {load:g}" if space.load_kind == "concurrency" else f"{load:g} req/s"


def _edge(space: SearchSpace, point: Point) -> str:
    return (f"its p99 {fmt('p99_ms', point.p99)} lies within {_pct(space.p99_headroom)} of the {space.p99_budget_ms:g} ms "
            "budget, where a p99 measured again is as likely over it as under")


def _passed_over(space: SearchSpace, point: Point) -> str:
    return (f"Not named: {point.choice.label} at {_load(space, point.load)}, {fmt('goodput_rps', point.goodput)} "
            f"goodput, on the budget's edge — {_edge(space, point)} (a headroom of 0 would name it).")


def _text(space: SearchSpace, advice: Recommendation) -> str:
    """Return the recommendation in one sentence: the point, its margin over the runner-up and what the spreads
    allow, the verdict."""
    best, runner, verdict = advice.best, advice.runner_up, advice.verdict
    head = (f"{best.choice.label} at {_load(space, best.load)}: {fmt('goodput_rps', best.goodput)} goodput inside "
            f"{space.p99_budget_ms:g} ms (p99 {fmt('p99_ms', best.p99)}; measured {len(best.repeats) + 1}×)")
    if runner is not None:
        above = f"{_pct(advice.margin)} above" if advice.margin is not None else "above"
        head += (f", {above} {runner.choice.label} ({fmt('goodput_rps', runner.goodput)}, measured "
                 f"{len(runner.repeats) + 1}×{'; its measurements disagree' if runner.marked else ''})")
        a, b = (f"±{_pct(x)}" if x is not None else "unknown" for x in advice.spreads)
        head += (f"; spread {a} and {b}, so a gap under {_pct(advice.allowed)} is noise"
                 if advice.allowed is not None else "; spread unknown (one window per measurement)")
    if verdict == DISAGREE:
        edge = f"; and on the budget's edge — {_edge(space, best)}" if _state(space, best) == EDGE else ""
        return f"{head}; but {best.marked}{edge}: not named alone — {_disagree_advice(advice)}."
    if verdict == ON_EDGE:
        return (f"{head}: on the budget's edge — {_edge(space, best)}; no point measured holds the budget with room: "
                "measure it again before relying on it.")
    if verdict == ONCE:
        return f"{head}: measured once, not confirmed by a repeat (re-measuring was off or did not finish)."
    if runner is None:
        room = " with room" if space.p99_headroom and _state(space, best) == INSIDE else ""
        return f"{head}: the only configuration inside the SLA{room}: clear."
    if verdict == CLEAR:
        return f"{head}: clear."
    cheaper = (runner.choice.instances is not None and best.choice.instances is not None
               and runner.choice.instances < best.choice.instances)
    return (f"{head}: within the spread — {runner.choice.label} is as good"
            + (" and cheaper (fewer instances)." if cheaper else "."))


def _disagree_advice(advice: Recommendation) -> str:
    """Return what to make of an operating point whose measurements disagree."""
    runner = advice.runner_up
    if runner is None or not runner.goodput:
        return "measure it again before relying on it"
    lowest = min((m.goodput for m in measurements(advice.best) if m.goodput is not None), default=0.0)
    over = (lowest - runner.goodput) / runner.goodput
    if over > (advice.allowed or 0.0):
        return (f"even its lowest measurement is {_pct(over)} above {runner.choice.label}; measure it again to settle "
                "its figure")
    return f"{runner.choice.label} may be as good; measure both again before relying on either"


def recommendation_text(space: SearchSpace, points: list[Point], result: dict | None = None) -> str:
    """Return the recommendation's sentence: from the points when their repeats are pooled in (sweep.with_repeats),
    else the one the sweep stored in its result, else from the points as they are ('' when none is inside the SLA)."""
    advice = recommend(space, points)
    stored = result.get("recommendation") if isinstance(result, dict) else None
    stored = stored if isinstance(stored, dict) else {}
    if (advice is None or not any(p.repeats for p in points)) and isinstance(stored.get("text"), str):
        return stored["text"]
    return advice.text if advice is not None else ""
