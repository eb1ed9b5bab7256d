"""Autopilot: the decision core of a controller that turns the instance count and max_queue_delay live to hold an SLA.

Pure: decide() reads one window's Figures and the served ModelSettings and returns a Decision; it applies nothing
(the lab applies it through the safe-apply path and tells record() what happened). The rules, and why:

- Goal: p99 under the SLA at the lowest instance count and the highest goodput (instances cost; batches pay).
- Judge only windows with enough answers (catalog.MIN_SAMPLES latencies, as every screen does), that began after
  the last change (a window holding the old config or the reload says nothing about the new one), and count a quiet
  window only when it does not overlap the last one counted (the same seconds are not two pieces of evidence).
- Near or over the SLA (p99 ≥ ACT_SHARE × SLA: a change takes a dwell to show, so act before the line is crossed):
  when the queue dominates by diagnosis's own rule (WAITING_SHARE) and the wait is the batching delay itself (up to
  DELAY_BOUND × the delay) and a smaller allowed delay exists, lower the delay one step — the field guide's "remove
  waiting before adding instances"; otherwise add one instance, or, when arrivals outrun service (offered ≥ OUTRUN ×
  served requests), as many as the shortfall asks with HEADROOM spare — a flash crowd is not met one dwell at a time.
- Far under the SLA for a sustained stretch (RELAX_WINDOWS disjoint windows in a row under RELAX_SHARE × SLA):
  remove one instance, down to the minimum — unless the offered rate needs them at the rate per instance last
  measured saturated (queueing is steep: 40 % of the SLA with n instances can be over it with n − 1); at the
  minimum, give the delay back one step toward the one it started with (bigger batches, more goodput), never past it.
- Never oscillate: at least dwell_s between two changes (a reload must show in a window of its own), at most
  max_per_minute changes in any 60 s, no step down for HYSTERESIS_DWELLS × dwell_s after a step up or a window near
  the SLA, and that hold doubled (up to MAX_HOLD_S) each time a step down had to be undone within FLAP_DWELLS dwells.
- With a forecast (app.autopilot.forecast: an Outlook per window, the rate expected within its lead and within a
  longer horizon) and the rate one instance carries within the SLA (the forecast's — a sweep's operating point —
  else the most one instance has carried in a window under ACT_SHARE of the SLA, a lower bound): add instances
  before the expected rate arrives (sized with AHEAD_HEADROOM), and give one back when the rate expected over the
  longer horizon needs fewer (with GIVE_BACK_HEADROOM) and p99 is not near the SLA; the reactive rules stay the
  safety net, and no quiet step down happens while the forecast still needs the count. A planned change is not
  held back by hysteresis after it (the forecast says when it ends); a window near the SLA still is. A planned add
  of several instances is applied one instance per reload, ADD_GAP_S apart, as many reloads as fit in the lead
  (loading two at once takes the CPU the serving one needs).
- An instance count outside the bounds is brought to the nearest bound first: the user's bounds win.
- Stop, and say why, on a refused apply, a failure rate above failure_stop (judged, like latency, on
  MIN_SAMPLES attempts that ended), a server restart, a config changed by someone else (the autopilot would fight
  it), or a model it cannot steer (several instance groups). Once stopped it decides nothing until reset().
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.autopilot.forecast import Outlook
from app.autopilot.twin_sizing import TwinSizer
from app.autopilot.rules import (ACT_SHARE, ADD, FLAP_DWELLS, RELAX_SHARE, RELAX_WINDOWS, RELAXING,
                                 REMOVE, Bounds, BoundsError, KnobState, Step, ahead, ahead_needs, ahead_relax,
                                 cannot_steer, end_words, hold_s, into_bounds, outrun, pressure_words, quiet_words,
                                 relax, still_needed, tighten)
from app.config.settings import ModelSettings
from app.diagnosis.patterns import Symptoms, percent
from app.diagnosis.diagnose import window_from
from app.timeline.figures import Figures
from app.metrics.catalog import MIN_SAMPLES

__all__ = ["ADVISED", "APPLIED", "REFUSED", "RESTARTED", "Autopilot", "Bounds", "BoundsError", "Decision", "DecisionOutcome"]

HOLD, WAIT, STOP = "hold", "wait", "stop"  # decisions without a change (a change's kind is its Step's)
APPLIED, REFUSED, RESTARTED = "applied", "refused", "restarted"  # what the lab did with a decision
ADVISED = "advised"  # advisory mode: shown, not applied; the pace rules count it, the knobs served stay


@dataclass(frozen=True)
class Decision:
    """What the autopilot decided at t: the knobs to apply (empty: none), why in plain words, the figures it rests
    on, and stop (non-empty: it stopped itself, and why)."""

    t: float
    kind: str  # add | remove | lower_delay | raise_delay | bounds | hold | wait | stop
    reason: str
    knobs: dict = field(default_factory=dict)  # for app.config.knobs.apply_knobs: instance_count, max_queue_delay_microseconds
    figures: dict = field(default_factory=dict)  # the numbers the reason quotes, with the window's t0 and t1
    stop: str = ""
    stepwise: bool = False  # an add ahead of a forecast: applied one instance per reload (reload_steps)

    @property
    def changes(self) -> bool:
        """Return True when the decision asks for a config change."""
        return bool(self.knobs)

    @property
    def marker_text(self) -> str:
        """Return the chart marker's words."""
        return f"autopilot: {self.reason}"

    def to_dict(self) -> dict:
        """Return the decision as stored in a study."""
        return {"t": self.t, "kind": self.kind, "reason": self.reason, "knobs": dict(self.knobs),
                "figures": dict(self.figures), "stop": self.stop, "stepwise": self.stepwise}


@dataclass(frozen=True)
class DecisionOutcome:
    """What the lab did with the last decision: applied, refused (text: the apply's error) or a server restart."""

    kind: str
    text: str = ""
    t: float | None = None  # when it happened (applied: when the new config served); None: the autopilot's clock
    instances: int | None = None  # applied: the count serving when a stepwise add stopped short (None: as decided)

    def __post_init__(self) -> None:
        if self.kind not in (APPLIED, REFUSED, RESTARTED, ADVISED):
            raise ValueError(f"outcome kind {self.kind!r}; use one of {APPLIED}, {REFUSED}, {RESTARTED}, {ADVISED}")


class Autopilot:
    """Decide one knob step per window within Bounds, with dwell, hysteresis and self-stop (see the module's rules)."""

    def __init__(self, bounds: Bounds, clock: Callable[[], float] = time.time, sizer: TwinSizer | None = None) -> None:
        self.bounds, self._clock = bounds, clock
        self.sizer = sizer  # the twin (app.autopilot.twin_sizing): asked how many instances hold; None: rules alone
        self._log: list[Decision] = []
        self.reset()

    def reset(self) -> None:
        """Forget the stop and every trend: the next window starts afresh (the log stays)."""
        self._stopped = ""
        self._changes: list[float] = []  # when each change served (when it was decided, until recorded)
        self._advised = False  # the last entry of _changes was advice, not applied (advisory mode)
        self._advice: tuple[int, int] | None = None  # (instances served, instances advised) of the last advice
        self._last_up: float | None = None  # when the last tightening served, or the last window near the SLA ended
        self._last_down: float | None = None  # when the last step down served
        self._flaps = 0  # step downs that had to be undone: each doubles the hold before the next
        self._pending: tuple[Decision, Step, KnobState] | None = None  # the change awaiting record()
        self._expected: KnobState | None = None  # the knobs the model should serve
        self._start_delay: int | None = None  # the delay found at the start: raise-back never goes past it
        self._quiet, self._quiet_since, self._quiet_t1 = 0, 0.0, float("-inf")
        self._last_share: float | None = None
        self._saturated: tuple[int, float] | None = None  # (instances, requests/s each) when arrivals outran service
        self._carried = 0.0  # the most requests/s one instance carried in a window under ACT_SHARE of the SLA

    @property
    def stopped(self) -> str:
        """Return why the autopilot stopped ('' while it runs)."""
        return self._stopped

    @property
    def log(self) -> tuple[Decision, ...]:
        """Return every change it decided and its stop, in order (what a study saves)."""
        return tuple(self._log)

    def decide(self, figures: Figures, settings: ModelSettings, now: float, no_room: str = "",
               outlook: Outlook | None = None) -> Decision:
        """Return the decision for one window of the model as it serves settings. no_room: why one more instance
        would not fit (the GPU panel's words; '' when it fits or nothing is known) — then none is added. outlook:
        what a forecast expects from now (None: react to the window alone)."""
        if self._stopped:
            return Decision(now, STOP, f"stopped: {self._stopped}", stop=self._stopped)
        state = KnobState.of(settings)
        problem = cannot_steer(settings) or self._changed_outside(state)
        if problem:
            return self._stop(now, problem)
        self._expected = state
        if self._start_delay is None:
            self._start_delay = state.delay_us
        symptoms = window_from(figures, settings)
        numbers = _numbers(figures, symptoms, state, self.bounds)
        failing = self._failing(figures)
        if failing:
            return self._stop(now, failing, numbers)
        waiting = self._not_judged(figures)
        if waiting:
            return Decision(now, WAIT, waiting, figures=numbers)
        if outlook is not None:
            numbers["forecast"] = outlook.to_dict()
        return self._judge(figures, symptoms, state, numbers, now, no_room, outlook, settings)

    def record(self, outcome: DecisionOutcome) -> None:
        """Take what the lab did with the last decision: an applied change starts the dwell; a refusal or a restart
        stops the autopilot."""
        t = self._clock() if outcome.t is None else outcome.t
        pending, self._pending = self._pending, None
        if outcome.kind == RESTARTED:
            self._stop(t, "the server restarted" + (f" ({outcome.text})" if outcome.text else "")
                       + ": its figures and config start over — turn the autopilot on again to resume")
        elif outcome.kind == REFUSED:
            what = f" ({pending[0].reason})" if pending else ""
            self._stop(t, f"the lab refused the change{what}: {outcome.text or 'no reason given'}")
        elif pending is None:
            raise ValueError(f"record({outcome.kind}) without a decision that changed something: call decide() first")
        elif outcome.kind == ADVISED:  # not applied: the same advice waits a dwell, the knobs served stay expected
            self._changes[-1] = t
            self._advised = True
            decision, step, _ = pending
            count, served = step.knobs.get("instance_count"), decision.figures.get("instances")
            self._advice = (served, int(count)) if count is not None and served is not None else None
        else:
            _, step, state = pending
            if outcome.instances is not None:
                state = replace(state, instances=outcome.instances)
            self._changes[-1] = t  # the dwell counts from when the new config served
            self._advised, self._advice = False, None
            self._expected = state
            if step.tightens and not step.planned:
                undone = self._last_down is not None and t - self._last_down < FLAP_DWELLS * self.bounds.dwell_s
                self._flaps += undone
                self._last_up = max(t, self._last_up or t)
            elif step.kind in RELAXING:
                self._last_down = t

    def _judge(self, figures: Figures, symptoms: Symptoms, state: KnobState, numbers: dict, now: float,
               no_room: str = "", outlook: Outlook | None = None, settings: ModelSettings | None = None) -> Decision:
        """Return the decision for a window fit to judge: a step, held by the pace rules or not, or a hold."""
        rising = self._rising(symptoms.waiting_share)
        p99 = figures.get("p99_ms")
        if p99 >= ACT_SHARE * self.bounds.sla_p99_ms:  # pressure holds step downs back like a step up does
            self._last_up = max(figures.t1, self._last_up or figures.t1)
        served = served_rps(figures)
        if outrun(symptoms.offered_rps, served) > 1:
            self._note_saturated(state.instances, served)
        elif served and p99 < ACT_SHARE * self.bounds.sla_p99_ms:
            self._carried = max(self._carried, served / state.instances)
        self._count_quiet(figures, p99)
        step, why = self._step(figures, symptoms, state, rising, no_room, outlook)
        step, why = self._ask_twin(step, why, symptoms, state, settings, served, numbers)
        if step is None:
            return Decision(now, HOLD, why, figures=numbers)
        reason = f"{why}: {step.words}" if why else step.words
        held = self._held(step, now)
        if held:
            return Decision(now, HOLD, f"{reason} — held: {held}", figures=numbers)
        decision = Decision(now, step.kind, reason, dict(step.knobs), numbers, stepwise=step.stepwise)
        self._changes.append(now)
        self._quiet, self._quiet_t1 = 0, float("-inf")  # the new config must prove itself quiet again
        self._pending = (decision, step, _after(state, step))
        self._log.append(decision)
        return decision

    def _step(self, figures: Figures, symptoms: Symptoms, state: KnobState, rising: bool,
              no_room: str = "", outlook: Outlook | None = None) -> tuple[Step | None, str]:
        """Return the step the window calls for and the words for why (no step: why not)."""
        p99, sla = figures.get("p99_ms"), self.bounds.sla_p99_ms
        served = served_rps(figures)
        bounded = into_bounds(state, self.bounds)
        if bounded is not None:
            return bounded, ""
        # no room for one more instance (GPU memory): the count it has is the most it may have, this window
        room = replace(self.bounds, max_instances=max(self.bounds.min_instances, state.instances)) \
            if no_room and state.instances < self.bounds.max_instances else self.bounds
        per = self._instance_rps(outlook)
        if outlook is not None and per:
            planned = ahead(state, outlook, per, room)
            if planned is not None:
                return planned, ""
        if p99 >= ACT_SHARE * sla:
            why = pressure_words(p99, symptoms, sla, rising)
            step = tighten(state, symptoms, room, served)
            if step is None and room is not self.bounds:
                return None, f"{why}: no instance added: {no_room}"
            return step, why if step else f"{why}: {end_words(state, self.bounds)}"
        if outlook is not None and per:
            planned = ahead_relax(state, outlook, per, self.bounds)
            if planned is not None:
                return planned, ""
        if self._quiet >= RELAX_WINDOWS:
            step = relax(state, self.bounds, self._start_delay)
            why = quiet_words(p99, sla, self._quiet, self._quiet_t1 - self._quiet_since)
            learned = self._saturated[1] if self._saturated else None
            needed = (still_needed(state, symptoms.offered_rps, learned) or ahead_needs(state, outlook, per)) \
                if step and step.kind == REMOVE else ""
            if needed:  # queueing is steep: 50 % of the SLA with n instances can be over it with n - 1
                return None, f"{why}: −1 instance held: {needed}"
            return step, why if step else f"{why}: nothing left to give back within the bounds"
        return None, f"p99 {p99:.1f} ms, {percent(p99 / sla)} of the {sla:g} ms SLA: holding"

    def _ask_twin(self, step: Step | None, why: str, symptoms: Symptoms, state: KnobState,
                  settings: ModelSettings | None, served: float | None, numbers: dict) -> tuple[Step | None, str]:
        """Size an add, or hold a give-back, by the twin's answer at the offered rate (nothing to ask without a sizer,
        settings or an offered rate: the rules' step stands)."""
        rate = symptoms.offered_rps or served
        if self.sizer is None or step is None or settings is None or not rate or step.planned:
            return step, why
        sla = self.bounds.sla_p99_ms
        if step.kind == ADD and step.tightens:
            advised = self._advice[1] if self._advice and self._advice[0] == state.instances else None
            fewest = self.sizer.fewest(settings, rate, sla, state.instances + 1, self.bounds.max_instances, advised)
            if fewest is None:
                return step, why
            numbers["twin"] = {"instances": fewest.instances, "holds": fewest.holds,
                               "p99_high_ms": fewest.p99_high_ms, "words": fewest.words}
            if not fewest.holds and fewest.host_cpu is not None:
                # No count holds where the host is the limit: instances add their own load to its CPUs (text_len at
                # 4,200 req/s: 0.71-0.74 busy at one, 0.96-0.99 at three, p99 390 ms, 2026-12-07). The twin sizes
                # nothing: the rules' step stands, with its answer beside it.
                return replace(step, words=f"{step.words} (the twin: no count up to {fewest.instances} holds — "
                                           f"{fewest.words}; the host, not the instances, is the limit, so it "
                                           "sizes nothing)"), why
            more = fewest.instances - state.instances
            return Step(ADD, {"instance_count": fewest.instances},
                        f"+{more} instance{'s' if more > 1 else ''} ({state.instances} → {fewest.instances}): "
                        f"{fewest.words}" + ("" if fewest.holds else " — the most the bounds allow"), True), why
        if step.kind == REMOVE:
            fewer = self.sizer.verdict(settings, state.instances - 1, rate, sla)
            if fewer is not None:
                numbers["twin"] = {"instances": fewer.instances, "holds": fewer.holds,
                                   "p99_high_ms": fewer.p99_high_ms, "words": fewer.words}
                if not fewer.holds:
                    return None, f"{why}: −1 instance held: {fewer.words}, over {self.sizer.share:.0%} of the SLA"
        return step, why

    def _instance_rps(self, outlook: Outlook | None) -> float | None:
        """Return the requests/s one instance carries within the SLA, for sizing to a forecast: the one given with
        it, else the most one instance has carried so far in a window under ACT_SHARE of the SLA (a lower bound:
        it sizes generously until the traffic shows more; None before any such window)."""
        if outlook is not None and outlook.instance_rps:
            return outlook.instance_rps
        return self._carried or None

    def _held(self, step: Step, now: float) -> str:
        """Return why the pace rules hold a step back now ('' when they let it through)."""
        dwell = self.bounds.dwell_s
        if self._changes and now - self._changes[-1] < dwell:
            last = "advice" if self._advised else "change"  # advisory mode changes nothing: its advice waits
            return f"the last {last} was {now - self._changes[-1]:.0f} s ago; the dwell is {dwell:g} s"
        recent = [t for t in self._changes if now - t < 60.0]
        if len(recent) >= self.bounds.max_per_minute:
            return f"{len(recent)} changes in the last minute, at most {self.bounds.max_per_minute}"
        hold = hold_s(self.bounds, self._flaps)
        if step.kind in RELAXING and self._last_up is not None and now - self._last_up < hold:
            undone = f" (doubled after {self._flaps} step down(s) that had to be undone)" if self._flaps else ""
            return (f"capacity was needed {now - self._last_up:.0f} s ago; no step down for {hold:g} s after a step "
                    f"up or a window near the SLA{undone}")
        return ""

    def _failing(self, figures: Figures) -> str:
        """Return the stop's words when the window's failure share is above the bound ('' otherwise)."""
        failed, ended = figures.failures()
        if ended < MIN_SAMPLES or failed / ended <= self.bounds.failure_stop:
            return ""
        latest = figures.latest_error()
        words = f": {latest['latest']}" if latest and latest.get("latest") else ""
        return (f"{percent(failed / ended)} of requests failing ({failed:,} of {ended:,}), above the "
                f"{percent(self.bounds.failure_stop)} stop threshold{words}")

    def _not_judged(self, figures: Figures) -> str:
        """Return why the window cannot be judged ('' when it can)."""
        n = figures.samples()
        if n < MIN_SAMPLES or figures.get("p99_ms") is None:
            return f"waiting for enough answers: {n} of {MIN_SAMPLES} in the window"
        if self._changes and figures.t0 < self._changes[-1]:
            return (f"waiting for a window of the new config: this one began {self._changes[-1] - figures.t0:.0f} s "
                    "before the last change")
        return ""

    def _changed_outside(self, state: KnobState) -> str:
        """Return the stop's words when the served knobs are not the ones the autopilot left ('' when they are)."""
        expected = self._expected
        if expected is None or state == expected:
            return ""
        return (f"the config changed outside the autopilot (instances {expected.instances} → {state.instances}, "
                f"delay {expected.delay_us} → {state.delay_us} µs): it stops rather than fight it"
                + ("; record() every applied decision" if self._pending else ""))

    def _count_quiet(self, figures: Figures, p99: float) -> None:
        """Count disjoint windows in a row under RELAX_SHARE of the SLA; any other window starts the count again."""
        if p99 >= RELAX_SHARE * self.bounds.sla_p99_ms:
            self._quiet, self._quiet_t1 = 0, float("-inf")
        elif figures.t0 >= self._quiet_t1:  # an overlapping window adds no evidence
            self._quiet_since = figures.t0 if self._quiet == 0 else self._quiet_since
            self._quiet, self._quiet_t1 = self._quiet + 1, figures.t1

    def _note_saturated(self, instances: int, served: float) -> None:
        """Keep what one instance serves when saturated: the latest count's best window (one holding a ramp
        under-counts; a rate measured at other counts is stale, as instances sharing a device each serve less)."""
        known = self._saturated
        if known is None or instances != known[0] or served / instances > known[1]:
            self._saturated = (instances, served / instances)

    def _rising(self, share: float | None) -> bool:
        """Return whether the queue's share grew since the last judged window (and keep this one's)."""
        last, self._last_share = self._last_share, share
        return share is not None and last is not None and share > last

    def _stop(self, t: float, why: str, numbers: dict | None = None) -> Decision:
        """Stop, log the stop and return it."""
        self._stopped = why
        decision = Decision(t, STOP, f"stopped: {why}", figures=numbers or {}, stop=why)
        self._log.append(decision)
        return decision


def served_rps(figures: Figures) -> float | None:
    """Return the requests/s served in the window: the clients' answered rate (it counts the same requests as their
    offered rate, with no scrape lag: a window's last second is in), else the server's successes (requests, not
    items: infer_rps counts a batch's items)."""
    answered = figures.get("throughput_rps")
    return answered if answered else figures.get("request_rps")


def _after(state: KnobState, step: Step) -> KnobState:
    """Return the knobs the model serves once step is applied."""
    return KnobState(int(step.knobs.get("instance_count", state.instances)),
                     step.knobs.get("max_queue_delay_microseconds", state.delay_us))


def _numbers(figures: Figures, symptoms: Symptoms, state: KnobState, bounds: Bounds) -> dict:
    """Return the figures a decision rests on (what its words quote), JSON-ready."""
    failed, ended = figures.failures()
    return {"t0": figures.t0, "t1": figures.t1, "p99_ms": figures.get("p99_ms"), "p50_ms": figures.get("p50_ms"),
            "samples": figures.samples(), "sla_p99_ms": bounds.sla_p99_ms, "waiting_share": symptoms.waiting_share,
            "queue_us": symptoms.queue_us, "request_us": symptoms.request_us, "failed": failed, "ended": ended,
            "instances": state.instances, "delay_us": state.delay_us}
