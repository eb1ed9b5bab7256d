"""The autopilot at work on a lab: every period it measures the model's last window, asks app.autopilot.pilot for a
decision, applies a change through the lab's safe-apply path (a marker on the charts with the reason in words),
tells the autopilot what happened, and keeps it all as a study (kind 'autopilot'): every judged window's figures
with the knobs served and the decision, so a run can be replayed on its recorded windows (replay()).

It stops itself — and says why — when the autopilot stops (a refused apply, failures above the threshold, a server
restart, someone else's change), and ends on Cancel or after duration_s; the config it left keeps serving (the
autopilot's changes are the point: Undo on the page takes them back one by one)."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from app.autopilot.pilot import ADVISED, APPLIED, REFUSED, RESTARTED, Autopilot, Bounds, Decision, DecisionOutcome
from app.autopilot.twin_sizing import TwinSizer, SizingAnswer, lab_load_words, lab_predictor
from app.autopilot.forecast import ForecastClock, Outlook
from app.autopilot.rules import ADD_GAP_S, KnobState, hold_s, reload_steps
from app.config.edits import set_settings
from app.config.ensembles import tuned_at_its_steps
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.config.settings import Kind, ModelSettings
from app.experiments.driving import restarted
from app.experiments.report.environment import environment
from app.store.database import DONE, FAILED, INTERRUPTED, Study
from app.lab.ports import StudyLab
from app.timeline.figures import Figures
from app.config.knobs import apply_knobs

log = logging.getLogger(__name__)

KIND = "autopilot"
WINDOW_S = 5.0  # each decision reads the last 5 s: enough answers for a p99 at tens of req/s, short enough to follow
PERIOD_S = 2.0  # a decision every 2 s; the dwell (Bounds.dwell_s) paces the changes themselves
STOPPED = "stopped"  # an interrupted study's note starts with this: the autopilot stopped itself
HANDOVER_S = 0.15  # the load generator's records reach the lab within this (loadgen.run.FLUSH_S is 50 ms)
KEEP = 2000  # recorded windows kept in a study: 2,000 × 2 s is over an hour
ADVICE_MARK_S = 60.0  # the same advice gets a chart marker at most this often (each window's is in the study): one
# every dwell drew 12 markers in 3 min over the charts it was meant to explain (2026-12-07)


@dataclass
class AutopilotProgress:
    """What the pages show while the autopilot runs."""

    study_id: int
    model: str
    bounds: Bounds
    started: float
    windows: int = 0  # windows judged so far
    last: Decision | None = None  # the latest decision, changes and holds alike
    changes: list[Decision] = field(default_factory=list)  # every change and the stop, in order
    serving: dict = field(default_factory=dict)  # instances and delay_us as served now
    stopped: str = ""  # why it stopped itself ('' while it runs)
    finished: bool = False
    forecast: str = ""  # what it sizes ahead of ('' without a forecast)
    advisory: bool = False  # it says what it would change, and applies nothing

    # what every study's progress offers the Experiments page's job panel and the demo story
    @property
    def done(self) -> int:
        return self.windows

    @property
    def total(self) -> int:
        return self.windows

    eta_s = None

    @property
    def current(self) -> str:
        return self.last.reason if self.last is not None else "waiting for the first window"

    @property
    def log(self) -> list[str]:
        return [f"{time.strftime('%H:%M:%S', time.localtime(d.t))} {d.reason}" for d in self.changes]


@dataclass(frozen=True)
class AutopilotResult:
    """How an autopilot run ended."""

    study_id: int
    status: str  # done (turned off, or its duration ran out) | interrupted (it stopped itself) | failed
    stopped: str
    changes: tuple[Decision, ...]
    windows: int


class AutopilotJob:
    """The autopilot as the lab's background study (app.lab.jobs.Job): run(progress, cancel) blocks."""

    kind = KIND

    def __init__(self, lab: StudyLab, model: str, bounds: Bounds, *, window_s: float = WINDOW_S,
                 period_s: float = PERIOD_S, duration_s: float | None = None, label: str = "",
                 clock: Callable[[], float] = time.time, forecast: ForecastClock | None = None,
                 since: Callable[[], float | None] | None = None, advisory: bool = False,
                 twin: bool = True) -> None:
        if not 1.0 <= window_s <= 60.0 or not 0.5 <= period_s <= window_s:
            raise ValueError(f"window_s {window_s:g} and period_s {period_s:g}: use a window of 1–60 s and a period "
                             "of 0.5 s up to the window")
        self.lab, self.model, self.bounds = lab, model, bounds
        self.window_s, self.period_s, self.duration_s, self._clock = window_s, period_s, duration_s, clock
        self.advisory = advisory  # say what it would change and why, apply nothing
        self._marked: tuple[str, float] | None = None  # the advice last marked on the charts, and when
        self.label = label or (f"autopilot {'advice ' if advisory else ''}on {model} (p99 ≤ {bounds.sla_p99_ms:g} ms)")
        # the twin sizes adds and holds give-backs ("will N instances hold the SLA at the rate expected?")
        self.pilot = Autopilot(bounds, clock=clock, sizer=TwinSizer(lab_predictor(lab, model), load_words=lab_load_words(lab, model))
                               if twin else None)
        self.forecast = forecast  # None: it reacts to the windows alone
        self._since = since  # when the traffic it steers for began (None from it: not yet); windows start after it
        self.records: list[dict] = []  # every judged window of the run (what its study keeps)
        self._cancel = threading.Event()  # run()'s: the pause between a stepwise add's reloads ends on it

    def run(self, progress: Callable[[object], None], cancel: threading.Event) -> AutopilotResult:
        """Steer the model until cancel, the duration's end or the autopilot's own stop; store it all (ValueError,
        nothing stored, for an ensemble: it has no instances or queue to steer)."""
        lab, model = self.lab, self.model
        self._cancel = cancel
        started = self._clock()
        served = lab.served_config(model)
        why = unsteerable(model, served)
        if why:  # every change it could make would be refused: said before a study is stored
            raise ValueError(why)
        settings = settings_of(served)
        study_id = lab.add_study(Study(
            KIND, self.label, model, {"bounds": bounds_dict(self.bounds), "window_s": self.window_s,
                                      "period_s": self.period_s, "duration_s": self.duration_s,
                                      "forecast": self._forecast_params(), "advisory": self.advisory,
                                      "twin": self.pilot.sizer is not None},
            started, base_config=lab.served_text(model), env=environment(lab, model)))
        state = AutopilotProgress(study_id, model, self.bounds, started, serving=_serving(settings),
                                  forecast=self.forecast.forecast.source if self.forecast is not None else "",
                                  advisory=self.advisory)
        progress(state)
        records = self.records
        status, note = DONE, "turned off"
        try:
            while not cancel.is_set():
                now = self._clock()
                if self.duration_s is not None and now - started >= self.duration_s:
                    note = f"ran its {self.duration_s:g} s"
                    break
                decision = self._once(now, started, records, state)
                progress(state)
                if decision is not None and decision.stop:
                    status, note = INTERRUPTED, f"{STOPPED}: {decision.stop}"
                    state.stopped = decision.stop
                    lab.mark(model, KIND, f"autopilot stopped: {decision.stop}")
                    break
                cancel.wait(max(0.0, self.period_s - (self._clock() - now)))
        except Exception as exc:  # noqa: BLE001 - a crash is shown and stored, never left running silently
            log.exception("autopilot failed")
            status, note = FAILED, f"{type(exc).__name__}: {exc}"
            state.stopped = note
        finally:
            state.finished = True
            lab.update_study(study_id, status=status, note=note, result={
                "records": records[-KEEP:], "changes": [d.to_dict() for d in self.pilot.log],
                "stopped": state.stopped, "windows": state.windows})
            progress(state)
        return AutopilotResult(study_id, status, state.stopped, self.pilot.log, state.windows)

    def _once(self, now: float, started: float, records: list[dict], state: AutopilotProgress) -> Decision | None:
        """Judge the last window and act on it; return the decision (None: the server cannot be read now)."""
        lab, model = self.lab, self.model
        gone = restarted(lab, model, started)
        if gone:
            self.pilot.record(DecisionOutcome(RESTARTED, gone.removeprefix("the server restarted ").strip("()")))
            return self.pilot.log[-1]
        try:
            config = lab.served_config(model)
        except ConfigError as exc:  # the server is down or restarting: the next period looks again
            log.info("autopilot: config unreadable: %s", exc)
            return None
        settings = settings_of(config)
        # the window ends just before now: the generator hands its records over every 50 ms (the served rate is
        # the clients' answered rate, app.autopilot.pilot.served_rps, so no scrape lag holds the decision back)
        end = now - HANDOVER_S
        begin = end - self.window_s
        if self._since is not None:  # an earlier load's answers say nothing about the traffic it steers for
            since = self._since()
            if since is None or since >= end:
                return None
            begin = max(begin, since)
        figures = lab.measure(model, begin, end)
        room = gpu_room(lab, model, settings)
        outlook = self.forecast.outlook(now, later_s(self.bounds), self.bounds.dwell_s) \
            if self.forecast is not None else None
        decision = self.pilot.decide(figures, settings, now, no_room=room, outlook=outlook)
        state.windows += 1
        state.last, state.serving = decision, _serving(settings)
        records.append(record_of(figures, settings, decision, room, outlook))
        if decision.changes and self.advisory:  # shown and kept, not applied: the knobs served stay
            advice = repr(sorted(decision.knobs.items()))
            if self._marked is None or self._marked[0] != advice or now - self._marked[1] >= ADVICE_MARK_S:
                lab.mark(model, KIND, f"autopilot advice (not applied): {decision.reason}")
                self._marked = (advice, now)
            self.pilot.record(DecisionOutcome(ADVISED, t=now))
            records[-1]["advised"] = True
        elif decision.changes:
            reloads: list[list] = []
            try:
                self._apply(decision, config, settings, reloads)
            except ConfigError as exc:
                self.pilot.record(DecisionOutcome(REFUSED, str(exc)))
            else:
                served = self._clock()
                served_count = reloads[-1][1] if decision.stepwise and reloads else None  # as replay() reads it
                self.pilot.record(DecisionOutcome(APPLIED, t=served, instances=served_count))
                records[-1]["applied_t"] = served
            if decision.stepwise and reloads:
                records[-1]["reloads"] = reloads  # when each count served (stopped short: those applied)
            try:
                state.serving = _serving(settings_of(lab.served_config(model)))
            except ConfigError:  # the server went away meanwhile: the next period looks again
                pass
        state.changes = list(self.pilot.log)
        return self.pilot.log[-1] if self.pilot.stopped else decision

    def _apply(self, decision: Decision, config, settings: ModelSettings, reloads: list[list]) -> None:
        """Apply a decision through the lab's safe apply — a stepwise add one instance per reload, ADD_GAP_S apart,
        each its own marker (a step refused raises ConfigError: the steps before it serve, the autopilot stops; turned
        off between two, the server unreadable, or the GPU panel saying the next instance would not fit, it applies
        no more; as many reloads as fit in the forecast's lead, the last taking the rest). reloads: gets [when it
        served, instances] of each reload applied."""
        lead = (decision.figures.get("forecast") or {}).get("lead_s") or 0.0
        steps = reload_steps(KnobState.of(settings).instances, decision.knobs, decision.stepwise,
                             most=max(1, int(lead // ADD_GAP_S)))
        for i, knobs in enumerate(steps):
            text = decision.marker_text
            if i:
                if self._cancel.wait(ADD_GAP_S):
                    return  # turned off between reloads: it changes nothing more
                try:
                    config = self.lab.served_config(self.model)
                except ConfigError as exc:  # the server went away: the next period sees it (a restart stops it)
                    log.info("autopilot: config unreadable between reloads: %s", exc)
                    return
                settings = settings_of(config)
                room = gpu_room(self.lab, self.model, settings)
                if room:  # the instances just added took the memory the next one needs
                    self.lab.mark(self.model, KIND, f"autopilot: the add stops at {reloads[-1][1]} "
                                                           f"instances: {room}")
                    return
            if len(steps) > 1:
                text += (f" — reload {i + 1} of {len(steps)}: {KnobState.of(settings).instances} → "
                         f"{knobs['instance_count']}")
            self.lab.apply(self.model, set_settings(config, apply_knobs(settings, knobs)), text)
            reloads.append([self._clock(), int(knobs.get("instance_count", KnobState.of(settings).instances))])

    def _forecast_params(self) -> dict | None:
        """Return what the study keeps of the forecast (its curve stays with its source)."""
        if self.forecast is None:
            return None
        f = self.forecast.forecast
        return {"source": f.source, "lead_s": f.lead_s, "instance_rps": f.instance_rps, "span_s": f.span_s}


def unsteerable(model: str, served) -> str:
    """Return why the autopilot cannot steer a model serving this config, '' when it can: an ensemble's instances
    and queues are its steps'."""
    steps = tuned_at_its_steps(model, served)
    return f"the autopilot steers a model's instances and queue delay; {steps}" if steps else ""


def later_s(bounds: Bounds) -> float:
    """Return the forecast horizon a step down must still carry: the hold after a step up (a step down the
    forecast would undo sooner than that is a flap)."""
    return hold_s(bounds, 0)


def gpu_room(lab: StudyLab, model: str, settings: ModelSettings) -> str:
    """Return why one more instance of a KIND_GPU model would not fit, as the GPU panel says it ('' when it fits,
    the model is not on GPUs, or the memory one instance takes is not known yet). The lab learns memory per count
    as the panel's view does, so the autopilot's own changes teach it."""
    groups = settings.instance_groups
    if not groups or all(g.kind != Kind.GPU for g in groups):
        return ""
    view = lab.gpu_view(model)
    return (view.warning or "") if view is not None else ""


def record_of(figures: Figures, settings: ModelSettings, decision: Decision, room: str = "",
              outlook: Outlook | None = None) -> dict:
    """Return what a study keeps of one judged window: the figures, the knobs served, the GPU room, the forecast's
    outlook and the decision (what replay() feeds the autopilot again)."""
    record = {"figures": figures.to_dict(),
              "serving": _serving(settings), "no_room": room, "decision": decision.to_dict()}
    if outlook is not None:
        record["outlook"] = outlook.to_dict()
    return record


def replay(records: list[dict], bounds: Bounds, settings: ModelSettings) -> list[Decision]:
    """Return the decisions an autopilot with bounds makes again on a run's recorded windows, each with the knobs
    it served then (the record of a run is its own proof: the same bounds give the same decisions, the same words).
    settings: the model's, whose two knobs each window sets; a change counts as applied when the run applied it."""
    clock = [0.0]
    pilot = Autopilot(bounds, clock=lambda: clock[0])
    out = []
    for rec in records:
        served = rec.get("serving") or {}
        knobs = {"instance_count": served.get("instances", KnobState.of(settings).instances)}
        if served.get("delay_us") is not None:
            knobs["max_queue_delay_microseconds"] = served["delay_us"]
        window = Figures.from_dict(rec.get("figures"))
        pilot.sizer = RecordedSizer.of(rec)  # the twin's answer as the run got it (None: the run asked none)
        decision = pilot.decide(window, apply_knobs(settings, knobs), rec["decision"]["t"], rec.get("no_room", ""),
                                Outlook.from_dict(rec.get("outlook")))
        out.append(decision)
        if decision.changes and rec.get("advised"):
            pilot.record(DecisionOutcome(ADVISED, t=decision.t))
        elif decision.changes:
            clock[0] = rec.get("applied_t", decision.t)
            reloads = rec.get("reloads")
            pilot.record(DecisionOutcome(APPLIED, t=rec["applied_t"], instances=int(reloads[-1][1]) if reloads else None)
                         if "applied_t" in rec
                         else DecisionOutcome(REFUSED, "not applied in the recorded run"))
        if pilot.stopped:
            break
    return out


class RecordedSizer:
    """The twin's answer a recorded window got, given back to a replay: the same verdict for the count it named."""

    def __init__(self, answer: dict) -> None:
        self.answer, self.share = answer, 0.8

    @classmethod
    def of(cls, record: dict) -> RecordedSizer | None:
        """Return the sizer of a recorded window, None when the run asked the twin nothing there."""
        answer = ((record.get("decision") or {}).get("figures") or {}).get("twin")
        return cls(answer) if answer else None

    def _verdict(self) -> SizingAnswer:
        a = self.answer
        return SizingAnswer(int(a["instances"]), bool(a["holds"]), float(a["p99_high_ms"]),
                       a.get("words") or "as the twin answered then")

    def verdict(self, settings, instances: int, rate_rps: float, sla_ms: float) -> SizingAnswer | None:
        return self._verdict() if instances == int(self.answer["instances"]) else None

    def fewest(self, settings, rate_rps: float, sla_ms: float, low: int, high: int) -> SizingAnswer | None:
        return self._verdict()


def bounds_dict(bounds: Bounds) -> dict:
    """Return the bounds as a study stores them."""
    return {**asdict(bounds), "delays_us": list(bounds.delays_us)}


def bounds_from(data: dict) -> Bounds:
    """Return the bounds a study stored."""
    return Bounds(**{**data, "delays_us": tuple(data.get("delays_us", ()))})


def _serving(settings: ModelSettings) -> dict:
    state = KnobState.of(settings)
    return {"instances": state.instances, "delay_us": state.delay_us}
