"""The autopilot's bounds and its pure rules: which one knob step a window calls for, and the words for it.

app.autopilot.pilot holds the state (dwell, hysteresis, stops); everything here is a function of its arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from app.config.settings import ModelSettings
from app.diagnosis.patterns import DELAY_BOUND, WAITING_SHARE, Symptoms, percent
from app.config.knobs import DELAYS_US, MAX_INSTANCES

ACT_SHARE = 0.8  # p99 at or above this share of the SLA: act before it is crossed (a change needs a dwell to show)
RELAX_SHARE = 0.5  # p99 under this share of the SLA ...
RELAX_WINDOWS = 3  # ... in this many disjoint windows in a row: room to give capacity back (one quiet window is luck)
OUTRUN = 1.1  # offered at least this multiple of served: arrivals outrun service by a measured shortfall, not noise
HEADROOM = 1.2  # size for offered × this: instances 100 % busy still queue without bound (p99 grows as load → 1)
AHEAD_HEADROOM = 1.2  # size for a forecast rate × this against what one instance carries within the SLA: a
#                      forecast is not exact (another day's noise, a surge a little early)
GIVE_BACK_HEADROOM = 1.5  # ... and give an instance back only when the rest carry the rate expected × this: a band
#                          between adding and removing, or a rate near a boundary removes and re-adds under load
HYSTERESIS_DWELLS = 3  # no step down for this many dwells after a step up or a window near the SLA ...
FLAP_DWELLS = 6  # ... and twice that hold each time a step down had to be undone within this many dwells ...
MAX_HOLD_S = 600.0  # ... up to 10 minutes: a count that is needed now and then stays
ADD_GAP_S = 1.0  # an add of several instances ahead of a forecast goes one instance per reload, this far apart:
# loading instances takes the CPU the serving one needs (bench.add_reload at 120–320 req/s: the worst second's p99
# 46–51 ms at the median with 1 → 3 in one reload, 30–37 ms one per reload; docs/MEASUREMENTS.md#autopilot)
MIN_DWELL_S = 2.0  # a reload takes up to about a second: a shorter dwell would judge windows made of the reload

ADD, REMOVE, LOWER_DELAY, RAISE_DELAY, BOUNDS = "add", "remove", "lower_delay", "raise_delay", "bounds"
RELAXING = (REMOVE, RAISE_DELAY)  # the steps hysteresis holds back after a tightening


class BoundsError(ValueError):
    """Autopilot bounds that cannot work; .field names the bound, the message the fix."""

    def __init__(self, name: str, problem: str) -> None:
        self.field = name
        super().__init__(f"autopilot bounds: {name} {problem}")


@dataclass(frozen=True)
class Bounds:
    """What the user lets the autopilot do: instance range, delays, the SLA, pace and the failure stop."""

    sla_p99_ms: float
    min_instances: int = 1
    max_instances: int = MAX_INSTANCES
    delays_us: tuple[int, ...] = DELAYS_US  # the delays it may choose; () leaves the delay alone
    dwell_s: float = 10.0  # at least this long between two changes
    failure_stop: float = 0.05  # stop when more than this share of the attempts that ended failed
    max_per_minute: int = 4  # at most this many changes in any 60 s

    def __post_init__(self) -> None:
        _number("sla_p99_ms", self.sla_p99_ms, "use the p99 the model must stay under, in ms (e.g. 50)")
        _count("min_instances", self.min_instances, 1, MAX_INSTANCES)
        _count("max_instances", self.max_instances, 1, MAX_INSTANCES)
        if self.min_instances > self.max_instances:
            raise BoundsError("min_instances", f"is {self.min_instances}, above max_instances "
                                               f"{self.max_instances}; use min ≤ max")
        delays = tuple(self.delays_us) if isinstance(self.delays_us, (tuple, list, set, frozenset)) else None
        odd = [self.delays_us] if delays is None else [d for d in delays if isinstance(d, bool) or d not in DELAYS_US]
        if odd:
            raise BoundsError("delays_us", f"has {odd}; use delays among the pages' {list(DELAYS_US)} µs")
        object.__setattr__(self, "delays_us", tuple(sorted(set(delays))))
        _number("dwell_s", self.dwell_s, f"use {MIN_DWELL_S:g} s or more (a reload must not fill the next window)")
        if self.dwell_s < MIN_DWELL_S:
            raise BoundsError("dwell_s", f"is {self.dwell_s:g} s; use {MIN_DWELL_S:g} s or more (a reload takes about "
                                         "a second: a shorter dwell judges windows made of the reload)")
        if not isinstance(self.failure_stop, (int, float)) or not 0 < self.failure_stop < 1:
            raise BoundsError("failure_stop", f"is {self.failure_stop!r}; use a share between 0 and 1 (0.05 = 5 %)")
        _count("max_per_minute", self.max_per_minute, 1, 60)


def _number(name: str, value, fix: str) -> None:
    """Refuse a value that is not a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise BoundsError(name, f"is {value!r}; {fix}")


def _count(name: str, value, low: int, high: int) -> None:
    """Refuse a value that is not a whole number in low..high."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BoundsError(name, f"is {value!r}; use a whole number {low}..{high}")


@dataclass(frozen=True)
class KnobState:
    """The two knobs the autopilot turns, as the model serves them (delay None: no dynamic batching)."""

    instances: int
    delay_us: int | None

    @classmethod
    def of(cls, settings: ModelSettings) -> KnobState:
        """Return the knobs of settings; the instance count is the first group's (what instance_count sets)."""
        groups = settings.instance_groups
        dyn = settings.dynamic_batching
        return cls(groups[0].count if groups else 1, dyn.max_queue_delay_microseconds if dyn else None)


@dataclass(frozen=True)
class Step:
    """One proposed change: its kind, the knobs for app.config.knobs.apply_knobs, its words, and whether it adds capacity."""

    kind: str
    knobs: dict
    words: str
    tightens: bool
    planned: bool = False  # sized from a forecast: the forecast, not the hysteresis, says when it ends

    @property
    def stepwise(self) -> bool:
        """Return True when the step is applied one instance per reload (reload_steps): an add ahead of a forecast
        has the time; an add under pressure does not wait."""
        return self.planned and self.kind == ADD


def reload_steps(instances: int, knobs: dict, stepwise: bool, most: int | None = None) -> list[dict]:
    """Return the knobs of each reload that brings a model serving `instances` to knobs: a stepwise add one
    instance per reload (ADD_GAP_S apart) — at most `most` reloads, the last taking the rest (the add must be done
    before the rate it is for arrives) — anything else in one reload."""
    want = knobs.get("instance_count")
    if not stepwise or want is None or want - instances < 2:
        return [dict(knobs)]
    counts = list(range(instances + 1, want + 1))
    limit = len(counts) if most is None else min(len(counts), max(1, most))
    counts = counts[:limit - 1] + [want]
    return [{**knobs, "instance_count": k} for k in counts]


def cannot_steer(settings: ModelSettings) -> str:
    """Return why the autopilot cannot steer a model ('' when it can)."""
    if len(settings.instance_groups) > 1:
        return (f"the model has {len(settings.instance_groups)} instance groups; the autopilot steers one group's "
                "count — merge them into one group, or tune by hand")
    return ""


def into_bounds(state: KnobState, bounds: Bounds) -> Step | None:
    """Return the step that brings an instance count outside the bounds to the nearest bound (the user's word wins)."""
    n = state.instances
    if n < bounds.min_instances:
        return Step(BOUNDS, {"instance_count": bounds.min_instances},
                    f"{n} instance(s), below the bounds' minimum: → {bounds.min_instances}", True)
    if n > bounds.max_instances:
        return Step(BOUNDS, {"instance_count": bounds.max_instances},
                    f"{n} instances, above the bounds' maximum: → {bounds.max_instances}", False)
    return None


def tighten(state: KnobState, symptoms: Symptoms, bounds: Bounds, served_rps: float | None = None) -> Step | None:
    """Return the step for a p99 near or over the SLA: a shorter delay when the wait is the batching delay itself
    (the field guide: remove waiting before adding instances), else more instances — one, or as many as the measured
    shortfall of served against offered requests asks for (a flash crowd is not met one dwell at a time); None at
    the bounds' end."""
    lower = _delay_below(state.delay_us, bounds)
    share, queue_us = symptoms.waiting_share, symptoms.queue_us
    # diagnosis's own rule: waiting-driven from WAITING_SHARE, and a wait past DELAY_BOUND × the delay is queueing
    # (arrivals outrun service), which a shorter delay does not cure
    if lower is not None and share is not None and share >= WAITING_SHARE and queue_us <= DELAY_BOUND * state.delay_us:
        return Step(LOWER_DELAY, {"max_queue_delay_microseconds": lower},
                    f"the wait is the batching delay: max_queue_delay {state.delay_us} → {lower} µs", True)
    n = state.instances
    if n >= bounds.max_instances:
        return None
    ratio = outrun(symptoms.offered_rps, served_rps)
    wanted = math.ceil(n * ratio * HEADROOM) if ratio > 1 else n + 1  # capacity taken as linear in instances
    more = min(max(1, wanted - n), bounds.max_instances - n)
    why = (f"arrivals outrun service (offered {symptoms.offered_rps:,.0f}/s, served {served_rps:,.0f}/s): "
           if ratio > 1 else "")
    return Step(ADD, {"instance_count": n + more},
                f"{why}+{more} instance{'s' if more > 1 else ''} ({n} → {n + more})", True)


def instances_for(rate_rps: float, per_instance_rps: float, headroom: float = AHEAD_HEADROOM) -> int:
    """Return the instances that carry rate_rps at per_instance_rps each with headroom (at least 1)."""
    return max(1, math.ceil(rate_rps * headroom / per_instance_rps))


def ahead(state: KnobState, outlook, per_instance_rps: float, bounds: Bounds) -> Step | None:
    """Return the step that sizes the instance count ahead of a forecast (outlook: app.autopilot.forecast.Outlook):
    when the rate expected within its lead needs more than serve, as many as the rate expected until a next change
    can follow (a dwell later) needs — a second step in the middle of a surge reloads under its queue; None when
    the count serving carries it (or it is the bounds' most)."""
    n = state.instances
    if min(instances_for(outlook.soon_rps, per_instance_rps), bounds.max_instances) <= n:
        return None
    cover = outlook.soon_rps if outlook.cover_rps is None else max(outlook.soon_rps, outlook.cover_rps)
    want = min(instances_for(cover, per_instance_rps), bounds.max_instances)
    until = (f" and {cover:,.0f}/s within {outlook.cover_s:g} s (before a next change may follow)"
             if outlook.cover_s is not None and cover > outlook.soon_rps else "")
    return Step(ADD, {"instance_count": want},
                f"the forecast ({outlook.source}) expects {outlook.soon_rps:,.0f}/s within {outlook.lead_s:g} s"
                f"{until}, {per_instance_rps:,.0f}/s per instance: +{want - n} instance{'s' if want - n > 1 else ''} "
                f"({n} → {want}) before it arrives{', one per reload' if want - n > 1 else ''}", True, planned=True)


def ahead_relax(state: KnobState, outlook, per_instance_rps: float, bounds: Bounds) -> Step | None:
    """Return one instance fewer when the highest rate the forecast expects for its longer horizon needs fewer
    than serve now, with GIVE_BACK_HEADROOM spare (None otherwise, or at the bounds' fewest)."""
    need = max(instances_for(outlook.later_rps, per_instance_rps, GIVE_BACK_HEADROOM), bounds.min_instances)
    n = state.instances
    if need >= n:
        return None
    return Step(REMOVE, {"instance_count": n - 1},
                f"the forecast ({outlook.source}) expects at most {outlook.later_rps:,.0f}/s for the next "
                f"{outlook.later_s:g} s, which {need} instance{'s carry' if need > 1 else ' carries'} at "
                f"{per_instance_rps:,.0f}/s each with a third spare: −1 instance ({n} → {n - 1}) to save cost", False,
                planned=True)


def ahead_needs(state: KnobState, outlook, per_instance_rps: float | None) -> str:
    """Return why the forecast needs the instances serving for its longer horizon ('' when it does not, or when
    there is no forecast or no rate per instance)."""
    if outlook is None or not per_instance_rps:
        return ""
    need = instances_for(outlook.later_rps, per_instance_rps, GIVE_BACK_HEADROOM)
    if need < state.instances:
        return ""
    return (f"the forecast ({outlook.source}) expects {outlook.later_rps:,.0f}/s within {outlook.later_s:g} s, "
            f"which needs {need} instances at {per_instance_rps:,.0f}/s each")


def outrun(offered_rps: float | None, served_rps: float | None) -> float:
    """Return offered ÷ served requests when arrivals outrun service by OUTRUN or more, else 1."""
    if not offered_rps or not served_rps or offered_rps < OUTRUN * served_rps:
        return 1.0
    return offered_rps / served_rps


def relax(state: KnobState, bounds: Bounds, start_delay_us: int | None) -> Step | None:
    """Return the step for a p99 far under the SLA: one instance fewer (cost), else the delay one step back toward
    the one it started with (bigger batches, more goodput); None when nothing is left to give back."""
    if state.instances > bounds.min_instances:
        return Step(REMOVE, {"instance_count": state.instances - 1},
                    f"−1 instance ({state.instances} → {state.instances - 1}) to save cost", False)
    higher = _delay_above(state.delay_us, bounds, start_delay_us)
    if higher is not None:
        return Step(RAISE_DELAY, {"max_queue_delay_microseconds": higher},
                    f"max_queue_delay {state.delay_us} → {higher} µs, back toward the starting "
                    f"{start_delay_us} µs, for bigger batches", False)
    return None


def _delay_below(delay_us: int | None, bounds: Bounds) -> int | None:
    """Return the next allowed delay below the current one (None without dynamic batching or none lower)."""
    if delay_us is None:
        return None
    return max((d for d in bounds.delays_us if d < delay_us), default=None)


def _delay_above(delay_us: int | None, bounds: Bounds, ceiling: int | None) -> int | None:
    """Return the next allowed delay above the current one, never past ceiling (the delay the autopilot found)."""
    if delay_us is None or ceiling is None:
        return None
    return min((d for d in bounds.delays_us if delay_us < d <= ceiling), default=None)


def still_needed(state: KnobState, offered_rps: float | None, per_instance_rps: float | None) -> str:
    """Return why one instance fewer would not carry the offered load, by the rate per instance last measured when
    arrivals outran service ('' when it would, or when no such rate is known)."""
    if not offered_rps or not per_instance_rps:
        return ""
    needed = math.ceil(offered_rps * HEADROOM / per_instance_rps)
    if needed < state.instances:
        return ""
    return (f"{offered_rps:,.0f}/s offered needs {needed} instances at the {per_instance_rps:,.0f}/s each served "
            "when arrivals last outran service")


def hold_s(bounds: Bounds, flaps: int) -> float:
    """Return how long no step down may follow a step up or a window near the SLA, after flaps undone step downs."""
    base = HYSTERESIS_DWELLS * bounds.dwell_s
    return max(base, min(MAX_HOLD_S, base * 2 ** flaps))


def pressure_words(p99_ms: float, symptoms: Symptoms, sla_ms: float, rising: bool) -> str:
    """Return the words for a p99 near or over the SLA, with the queue's share of server time."""
    where = "over" if p99_ms > sla_ms else f"at {percent(p99_ms / sla_ms)} of"
    text = f"p99 {p99_ms:.1f} ms {where} the {sla_ms:g} ms SLA"
    if symptoms.waiting_share is not None:
        text += f", queue wait {percent(symptoms.waiting_share)} of server time" + (" and rising" if rising else "")
    return text


def quiet_words(p99_ms: float, sla_ms: float, windows: int, seconds: float) -> str:
    """Return the words for a p99 far under the SLA for a sustained stretch."""
    return (f"p99 {p99_ms:.1f} ms, far under the {sla_ms:g} ms SLA (under {percent(RELAX_SHARE)} of it) "
            f"for {windows} windows ({seconds:.0f} s)")


def end_words(state: KnobState, bounds: Bounds) -> str:
    """Return why nothing is left to add: the bounds' end."""
    delay = "" if state.delay_us is None else f", delay {state.delay_us} µs"
    return f"nothing left to add within the bounds ({state.instances} of {bounds.max_instances} instances{delay})"
