"""A trace-judged sweep: every configuration of a grid plays the same trace once, and the trace picks.

Each configuration (instances × delay over the config serving at the start, as a sweep's SearchSpace names them) is
served through the study driver (validated, hot-reloaded, verified, marked; the starting config serves again at the
end), then the trace plays once under the same seed — every configuration sees the same arrivals — measured in
one-second windows (trace_play) and scored (trace_judge.score). Each played configuration is stored at once as a run
of the study (kind 'trace_run', its windows and score), so a stopped sweep resumes with the configurations not yet
played. The recommendation is trace_judge.judge's: the lowest instance count that holds the SLA through the trace,
else the best goodput.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config.errors import ConfigError
from app.config.model_config import parse_config
from app.experiments.driving import Cancelled, Failed, Progress, Start, StudyDriver
from app.experiments.report.environment import environment
from app.timeline.meter import Meter, merged
from app.experiments.sweep.space import RATE, Choice, SearchSpace
from app.store.database import DONE, FAILED, RUNNING, Experiment, Study, owner_tag
from app.lab.ports import StudyLab
from app.experiments.trace.judge import TOLERANCE, TraceScore, TraceVerdict, allowed_over, judge, score_words
from app.experiments.trace.play import TraceLoad, play, score_of, served_instances
from app.text_limits import check_label, fit
from loadgen.limits import check
from loadgen.specfile import spec_to_dict
from loadgen.stats import slas_of
from app.lab.jobs import FunctionJob
from app.timeline.figures import Figures

KIND = "trace_sweep"  # the study's kind
RUN = "trace_run"  # the kind of each configuration's stored run


@dataclass(frozen=True)
class TraceSweepPlan:
    """What a trace-judged sweep plays: configurations (instances × delays over the serving config), the trace, the
    SLA, the seed every configuration's playback shares, and the share of seconds over the SLA still holding it."""

    model: str
    load: TraceLoad
    sla_ms: float = 50.0
    instances: tuple[int, ...] = (1, 2)
    delays_us: tuple[int, ...] = ()
    include_default: bool = False
    seed: int = 1
    tolerance: float = TOLERANCE

    def __post_init__(self) -> None:
        if isinstance(self.load, dict):
            object.__setattr__(self, "load", TraceLoad.from_dict(self.load))
        object.__setattr__(self, "instances", tuple(int(v) for v in self.instances))
        object.__setattr__(self, "delays_us", tuple(int(v) for v in self.delays_us))
        check("sla_ms", self.sla_ms, "sla_ms")
        allowed_over(1.0, self.tolerance)  # the tolerance is a share
        if not self.instances and not self.delays_us and not self.include_default:
            raise ValueError("give instance counts or delays to play (or include the config serving at the start)")
        self.space()  # bounds of the grid, the SLA
        self.spec()  # the trace can be read and played within the load bounds

    def spec(self):
        """Return the load every configuration plays (TraceError, a ValueError, when it cannot be played)."""
        return self.load.spec(self.model, self.sla_ms, self.seed)

    def space(self) -> SearchSpace:
        """Return the grid as a sweep's search space (configurations and the SLA; its one load is a placeholder: the
        trace sets the rate)."""
        return SearchSpace(model=self.model, instances=self.instances, delays_us=self.delays_us,
                           include_default=self.include_default, load_kind=RATE, loads=(1.0,),
                           p99_budget_ms=self.sla_ms, adaptive=False)

    def to_dict(self) -> dict:
        return {"model": self.model, "load": self.load.to_dict(), "sla_ms": self.sla_ms,
                "instances": list(self.instances), "delays_us": list(self.delays_us),
                "include_default": self.include_default, "seed": self.seed, "tolerance": self.tolerance}

    @classmethod
    def from_dict(cls, data: dict) -> TraceSweepPlan:
        return cls(**{**data, "load": TraceLoad.from_dict(data["load"])})


@dataclass
class TraceRun:
    """One configuration played through the trace (or refused)."""

    choice: Choice
    status: str = DONE  # done, or failed: the configuration could not be applied
    score: TraceScore | None = None
    note: str = ""
    config_text: str = ""
    id: int | None = None


@dataclass
class TraceSweepProgress(Progress):
    """A trace-judged sweep's progress, with the configurations played so far."""

    runs: list[TraceRun] = field(default_factory=list)


@dataclass
class TraceSweepResult:
    """A finished (or stopped) trace-judged sweep."""

    study_id: int
    plan: TraceSweepPlan
    runs: list[TraceRun]
    status: str
    wall_s: float
    note: str = ""
    verdict: TraceVerdict | None = None

    @property
    def pick(self) -> TraceRun | None:
        """Return the configuration recommended."""
        return pick_of(self.runs, self.verdict)


def verdict_of(runs: list[TraceRun], tolerance: float) -> TraceVerdict:
    """Return the verdict over the runs played (by configuration label)."""
    return judge({r.choice.label: r.score for r in runs if r.status == DONE and r.score is not None}, tolerance)


def pick_of(runs: list[TraceRun], verdict: TraceVerdict | None) -> TraceRun | None:
    """Return the run a verdict picks."""
    if verdict is None or verdict.pick is None:
        return None
    return next((r for r in runs if r.choice.label == verdict.pick), None)


def run_trace_sweep(lab: StudyLab, plan: TraceSweepPlan | None = None, *, label: str = "", study_id: int | None = None,
                    progress: Callable[[TraceSweepProgress], None] | None = None,
                    cancel: threading.Event | None = None) -> TraceSweepResult:
    """Run (or resume, given study_id) a trace-judged sweep on the lab's server; return its result. Blocks."""
    store = lab
    started = time.monotonic()
    if study_id is None:
        if plan is None:
            raise ValueError("a new trace-judged sweep needs a plan")
        label = check_label(label, "the sweep's label") or fit(f"{plan.model} on {plan.load.describe()}")
        start = Start.now(lab, plan.model)
        study_id = store.add_study(Study(KIND, label, plan.model, {"plan": plan.to_dict(), "start": start.to_dict()},
                                         time.time(), base_config=start.text, env=environment(lab, plan.model)))
        done: dict[str, TraceRun] = {}
    else:
        study = store.study(study_id)
        if study.kind != KIND or study.status == DONE:
            raise ValueError(f"study {study_id} is not an unfinished trace-judged sweep")
        plan, start = TraceSweepPlan.from_dict(study.definition["plan"]), Start.of(study)
        done = {r.choice.key: r for r in load_runs(store, study_id)}
        store.update_study(study_id, status=RUNNING, owner=owner_tag(), note="")
    sweeper = _TraceSweeper(lab, plan, start, study_id, done, progress, cancel or threading.Event())
    status, note = sweeper.conclude(sweeper.run, start.text, start.had_file)
    runs = sweeper.runs()
    verdict = verdict_of(runs, plan.tolerance)
    result = TraceSweepResult(study_id, plan, runs, status, time.monotonic() - started, note, verdict)
    store.update_study(study_id, status=status, note=note, result={
        "verdict": verdict.to_dict(), "pick": result.pick.choice.key if result.pick else None,
        "played": sum(r.status == DONE for r in runs), "wall_s": result.wall_s})
    sweeper.report(final=True)
    return result


def load_runs(store, study_id: int, problems: list[str] | None = None) -> list[TraceRun]:
    """Return a trace-judged sweep's stored configurations that can be read, in the order played; one that cannot is
    left out (never raised), what is wrong with it appended to problems when given."""
    out = []
    for e in store.runs(study_id=study_id):
        if e.kind != RUN or e.status not in (DONE, FAILED):
            continue
        try:
            if e.broken:
                raise ValueError(e.broken)
            choice = Choice.from_key(e.point)
            data = e.outcome.get("score")
            run_score = TraceScore.from_dict(data) if e.status == DONE else None
            if e.status == DONE and not isinstance(data, dict):
                raise ValueError("it has no score")
        except (ValueError, TypeError, IndexError) as exc:
            if problems is not None:
                problems.append(f"configuration {e.point or '(unnamed)'!r} (run {e.id}) cannot be read: {exc}")
            continue
        note = e.outcome.get("note") or ""
        out.append(TraceRun(choice, e.status, run_score, note if isinstance(note, str) else str(note), e.config_text,
                            e.id))
    return out


class _TraceSweeper(StudyDriver):
    """The loop of one trace-judged sweep: serve, play, score, store — configuration by configuration."""

    what, kept = "trace-judged sweep", "configurations"

    def __init__(self, lab: StudyLab, plan: TraceSweepPlan, start: Start, study_id: int, done: dict[str, TraceRun],
                 progress, cancel: threading.Event) -> None:
        super().__init__(lab, plan.model, study_id, cancel, progress)
        self.plan, self.done = plan, done
        self.spec = plan.spec()
        self.base = parse_config(start.served)
        self.played: list[TraceRun] = []
        choices = plan.space().configurations(self.base)
        self.state = TraceSweepProgress(study_id, done=len(done), total=len(choices), runs=list(done.values()))

    def run(self) -> None:
        choices = self.plan.space().configurations(self.base)
        self.lab.stop_traffic("traffic stopped: a trace-judged sweep takes over")
        with self.lab.meter(self.model, slas_of(self.spec)) as meter:
            for choice in choices:
                if choice.key in self.done:
                    continue
                if self.cancel.is_set():
                    raise Cancelled
                self._one(meter, choice)
        tried = self.runs()
        if tried and all(r.status == FAILED for r in tried):
            reasons = list(dict.fromkeys(r.note.removeprefix("could not be applied: ") for r in tried))
            raise Failed(f"none of the {len(tried)} configurations could be applied to {self.model}: "
                         + " | ".join(reasons[:3]))

    def _one(self, meter: Meter, choice: Choice) -> None:
        self.state.current = choice.label
        self.report()
        try:
            self.serve(self.base if choice.start else choice.config(self.base), f"trace sweep: {choice.label}")
        except ConfigError as exc:
            self._keep(TraceRun(choice, FAILED, note=f"could not be applied: {exc}"), None, [])
            return
        windows = play(self, meter, self.spec, f"trace sweep: {choice.label}")
        served = served_instances(self.lab.served_config(self.model))
        run_score = score_of(windows, self.spec, self.plan.sla_ms, served)
        note = "" if run_score.behind is None else f"the load generator fell behind ({run_score.behind:.0%} sent late)"
        self._keep(TraceRun(choice, DONE, run_score, note, self.lab.served_text(self.model)), windows)

    def _keep(self, run: TraceRun, windows: list) -> None:
        whole = merged(windows).figures(self.model) if windows else Figures(self.model)
        t0, t1 = (windows[0].t0, windows[-1].t1) if windows else (None, None)
        exp = Experiment(
            f"{run.choice.label} on {self.plan.load.describe()}", self.model,
            run.config_text or self.lab.served_text(self.model), t0, t1, spec_to_dict(self.spec),
            whole.client_dicts(), whole.server.to_dict(), kind=RUN, status=run.status, study_id=self.study_id,
            point=run.choice.key, seed=self.plan.seed, windows=[w.to_dict() for w in windows or []],
            outcome={"score": run.score.to_dict() if run.score else None, "note": run.note, "choice": run.choice.key})
        run.id = self.lab.add_run(exp)
        self.played.append(run)
        self.state.done += 1
        self.state.runs = self.runs()
        self.state.log.append(f"{run.choice.label}: " + (score_words(run.score) if run.score else run.note))
        self.report()

    def runs(self) -> list[TraceRun]:
        """Return every configuration played: stored earlier, then now."""
        return [*self.done.values(), *self.played]

    def report(self, final: bool = False) -> None:
        self.publish(self.state, len(self.played), final)


def trace_sweep_job(lab: StudyLab, plan: TraceSweepPlan, label: str = "") -> FunctionJob:
    """Return the job of a new trace-judged sweep, for lab.start_job (ValueError for a label too long)."""
    check_label(label, "the sweep's label")
    return FunctionJob(KIND, label or f"{plan.model} on {plan.load.describe()}", lambda progress, cancel:
                       run_trace_sweep(lab, plan, label=label, progress=progress, cancel=cancel))


def resumed_trace_sweep_job(lab: StudyLab, study_id: int) -> FunctionJob:
    """Return the job that resumes a stopped trace-judged sweep: only the configurations it has not played yet."""
    return FunctionJob(KIND, f"trace-judged sweep {study_id} (resumed)", lambda progress, cancel: run_trace_sweep(
        lab, study_id=study_id, progress=progress, cancel=cancel))
