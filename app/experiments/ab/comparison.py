"""A/B (and A/B/C…) comparison under identical traffic, interleaved in repeated trials.

Every trial runs every arm once: its config is hot-reloaded, then the same seeded load (same arrivals,
classes and shapes) runs from its start, a warm-up is dropped and a fixed span is measured in
one-second windows with exact edges (meter.Meter). Trials alternate the order (A B, B A, …) so drift of a
shared machine hits every arm alike. Each metric's difference to the first arm comes with a paired
interval (confidence.paired); the verdict says "no clear difference" when the intervals include zero.
The verdict rests on the headline figures of the whole request stream, one family across every arm: their
intervals hold together at 95 % (each at 1 − 5 %/m, m = headline figures × arms compared with the
baseline), so trying more figures or more arms does not make a chance difference likelier to be called.
Every other figure keeps its own 95 % interval and is reported as a lead. Arms are named by letter and by what
they change from the baseline ("B (delay 0 → 5 ms)"); the verdict says every clear difference first, in a plain
sentence each (ab_words), the same words on the page and in the report.
Every trial is stored as it ends: a stopped comparison resumes without running a finished trial again.

Traffic that plays a request-rate trace (loadgen.rate_trace.trace_load) makes each trial one playback of the whole trace
per arm (trial_s: the played span, no warm-up; trace_play), scored as a trace-judged sweep scores it (trace_judge);
the recommendation is then the trace's verdict over each arm's pooled scores — the lowest instance count that holds
the SLA through the trace, else the best goodput — and the paired intervals stay beside it.
"""
from __future__ import annotations

import dataclasses
import functools
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.config.errors import ConfigError
from app.config.model_config import parse_config
from app.experiments.ab.verdict_words import change_words, config_words, findings
from app.experiments.ab.confidence import Difference, paired
from app.experiments.driving import Cancelled, Failed, Progress, Start, StudyDriver
from app.experiments.report.environment import environment
from app.timeline.meter import Meter, merged
from app.store.database import DONE, RUNNING, Experiment, Study, owner_tag
from app.lab.ports import StudyLab
from app.experiments.trace.judge import TOLERANCE, TraceScore, TraceVerdict, allowed_over, judge, pooled
from app.experiments.ab.trial import Trial
from app.experiments.trace.play import play, score_of, served_instances
from app.text_limits import MAX_ARM_CHARS, check_label, config_size_problem, fit
from loadgen.behind import fell_behind
from loadgen.limits import check, check_finite
from loadgen.rate_trace.trace_load import is_trace, played_s
from loadgen.spec import LoadSpec
from loadgen.specfile import spec_from_dict, spec_to_dict
from loadgen.stats import ALL, slas_of
from app.lab.jobs import FunctionJob
from app.timeline.figures import Figures

CLIENT_KEYS = ("throughput_rps", "goodput_rps", "p50_ms", "p99_ms", "rejected")
SERVER_KEYS = ("queue_share", "queue_us", "compute_us", "avg_batch", "fail_rps")
HEADLINE = ("goodput_rps", "p99_ms", "throughput_rps")  # what the plain verdict speaks about first


@dataclass(frozen=True)
class Arm:
    """One configuration of a comparison."""

    name: str
    config_text: str


@dataclass(frozen=True)
class ABPlan:
    """What to compare and how: arms (the first is the baseline), the traffic, trials and their length."""

    model: str
    arms: tuple[Arm, ...]
    spec: dict  # a LoadSpec as spec_to_dict gives it; its seed makes every run's schedule the same
    trials: int = 4
    trial_s: float = 5.0
    warmup_s: float = 1.0
    min_effect: float = 0.03
    tolerance: float = TOLERANCE  # on a trace: the share of played seconds over the SLA that still holds it

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", tuple(a if isinstance(a, Arm) else Arm(**a) for a in self.arms))
        if self.trace:  # a trial plays the whole trace once: what it measures is the played span, from its start
            object.__setattr__(self, "trial_s", round(played_s(spec_from_dict(self.spec).arrival), 6))
            object.__setattr__(self, "warmup_s", 0.0)
        if len(self.arms) < 2:
            raise ValueError("a comparison needs at least two configurations")
        if len({a.name for a in self.arms}) != len(self.arms):
            raise ValueError("give each configuration its own name")
        check_finite({"trials": self.trials, "trial_s": self.trial_s, "warmup_s": self.warmup_s,
                      "min_effect": self.min_effect})
        allowed_over(1.0, self.tolerance)  # a share
        if self.trials < 2:
            raise ValueError("at least two trials: one trial gives no idea of the noise")
        check("arms", len(self.arms), "configurations")
        for name, field in (("trials", "trials"), ("trial_s", "trial_s"), ("trial_warmup_s", "warmup_s"),
                            ("min_effect", "min_effect")):
            check(name, getattr(self, field), field)
        for arm in self.arms:
            check_label(arm.name, f"the name of configuration {fit(arm.name, 40)!r}", MAX_ARM_CHARS)
            if (wrong := config_size_problem(arm.config_text)) is not None:
                raise ValueError(f"{arm.name}: {wrong}")
        self.load_spec()  # the traffic every trial runs, inside the table of load bounds (loadgen.limits)
        for arm in self.arms:
            parse_config(arm.config_text, source=f"config of {arm.name}")

    @property
    def trace(self) -> bool:
        """Return True when the traffic plays a request-rate trace (each trial: one playback per arm)."""
        return isinstance(self.spec, dict) and is_trace(spec_from_dict(self.spec))

    def sla_ms(self) -> float:
        """Return the SLA a trace's seconds over are judged against: the strictest class's."""
        return min(c.sla_ms for c in self.load_spec().classes)

    def load_spec(self) -> LoadSpec:
        """Return the load every trial runs: the plan's spec, seeded, bounded to warm-up + trial + 1 s (a trace: played
        once, as long as it lasts); ValueError when it is outside the table of load bounds."""
        if not isinstance(self.spec, dict):
            raise ValueError("the comparison's traffic must be a LoadSpec as a mapping, "
                             f"not {type(self.spec).__name__}")
        spec = spec_from_dict(self.spec)
        if is_trace(spec):
            return dataclasses.replace(spec, seed=spec.seed if spec.seed is not None else 1, warmup_s=0.0,
                                       duration_s=played_s(spec.arrival), max_requests=None)
        return dataclasses.replace(spec, seed=spec.seed if spec.seed is not None else 1,
                                   duration_s=self.warmup_s + self.trial_s + 1.0, warmup_s=self.warmup_s,
                                   max_requests=None)

    def order(self, trial: int) -> tuple[Arm, ...]:
        """Return the arms in the order trial runs them: forwards on even trials, backwards on odd ones."""
        return self.arms if trial % 2 == 0 else tuple(reversed(self.arms))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ABPlan:
        return cls(**{**data, "arms": tuple(Arm(**a) for a in data["arms"])})


@dataclass
class ABResult:
    """Per arm, per trial figures; the differences to the baseline with their intervals."""

    study_id: int
    plan: ABPlan
    trials: dict[str, dict[int, Trial]]  # arm -> trial number (from 0) -> its figures and windows
    status: str = DONE
    note: str = ""
    wall_s: float = 0.0

    def classes(self) -> list[str]:
        found = {c for per in self.trials.values() for t in per.values() for c in t.figures.client}
        return [ALL, *sorted(found - {ALL})]

    def values(self, arm: str, key: str, cls: str = ALL) -> list[float | None]:
        """Return one metric of an arm per trial (trial order), None where not measured."""
        per = self.trials.get(arm, {})
        return [_value(per[t].figures, key, cls) if t in per else None for t in range(self.plan.trials)]

    @property
    def family(self) -> int:
        """Return how many intervals the verdicts rest on together: headline figures × arms against the baseline."""
        return len(HEADLINE) * (len(self.plan.arms) - 1)

    def differences(self, arm: str) -> list[tuple[str, Difference]]:
        """Return (class, difference) of every compared metric of arm against the baseline.

        The headline figures of all requests are intervals of the verdicts' family (`family`); the rest
        stand alone at 95 %.
        """
        base = self.plan.arms[0].name
        out = []
        classes = self.classes()
        for cls in classes if len(classes) > 2 else [ALL]:  # one class: its rows are the 'all' rows
            for key in CLIENT_KEYS:
                family = self.family if _headline(cls, key) else 1
                d = paired(key, self.values(base, key, cls), self.values(arm, key, cls), self.plan.min_effect, family)
                if d is not None:
                    out.append((cls, d))
        for key in SERVER_KEYS:
            d = paired(key, self.values(base, key), self.values(arm, key), self.plan.min_effect)
            if d is not None:
                out.append((ALL, d))
        return out

    def letter(self, arm: str) -> str:
        """Return an arm's letter by its place in the plan: A for the baseline, then B, C, …"""
        return string.ascii_uppercase[[a.name for a in self.plan.arms].index(arm)]

    @functools.cached_property
    def _titles(self) -> dict[str, str]:
        base = self.plan.arms[0]
        out = {base.name: f"A ({config_words(base.config_text)})"}
        for i, arm in enumerate(self.plan.arms[1:], 1):
            out[arm.name] = f"{string.ascii_uppercase[i]} ({change_words(base.config_text, arm.config_text)})"
        return out

    def title(self, arm: str) -> str:
        """Return an arm as reports name it: its letter and what it changes from the baseline, e.g. 'B (delay 0 →
        5 ms)'; the baseline's letter and its config in words."""
        return self._titles[arm]

    def findings(self, arm: str) -> list[str]:
        """Return the verdict of arm against the baseline as sentences: an opening, then every clear difference
        (the headline figures first, then any other), then the headline figures with no clear difference."""
        return findings(self.title(arm), self.letter(arm), "A", self.differences(arm), HEADLINE, self.plan.min_effect)

    def verdict(self, arm: str) -> str:
        """Return the plain verdict of arm against the baseline: the findings in one paragraph."""
        return " ".join(self.findings(arm))

    def trace_scores(self, arm: str) -> list[TraceScore]:
        """Return an arm's trace scores, one per trial played (a trace plan's; none otherwise)."""
        out = []
        for _, trial in sorted(self.trials.get(arm, {}).items()):
            if trial.trace is None:  # not a trace trial
                continue
            try:
                out.append(TraceScore.from_dict(trial.trace))
            except (KeyError, TypeError, ValueError):  # a score that cannot be read
                continue
        return out

    def trace_verdict(self) -> TraceVerdict | None:
        """Return the trace's verdict over every arm's scores pooled across its trials (by arm title); None when the
        traffic is no trace or no trial was scored."""
        if not self.plan.trace:
            return None
        scores = {self.title(a.name): pooled(s) for a in self.plan.arms if (s := self.trace_scores(a.name))}
        return judge(scores, self.plan.tolerance) if scores else None

    def recommendation(self) -> tuple[str, str]:
        """Return the arm to serve and why: on a trace, the trace's verdict (trace_verdict); otherwise, of those clearly
        better than the baseline on a headline figure and worse on none, the one with the most mean goodput; else the
        baseline."""
        verdict = self.trace_verdict()
        if verdict is not None and verdict.pick is not None:
            pick = next(a.name for a in self.plan.arms if self.title(a.name) == verdict.pick)
            return pick, f"judged on the trace: {verdict.reason}"
        base = self.plan.arms[0].name
        fine = []
        for arm in self.plan.arms[1:]:
            head = [d.verdict for c, d in self.differences(arm.name) if _headline(c, d.key)]
            if "better" in head and "worse" not in head:
                fine.append(arm.name)
        if not fine:
            return base, (f"keep {self.title(base)} — no other configuration is clearly better on goodput, p99 or "
                          f"throughput without being worse on another.")
        pick = max(fine, key=lambda a: sum(v for v in self.values(a, "goodput_rps") if v is not None))
        why = f"{self.title(pick)} — clearly better than A on a headline figure and worse on none"
        others = [self.letter(a) for a in fine if a != pick]
        if others:
            why += (f"; so is {', '.join(others)}. Each was compared with A, not with each other: {self.letter(pick)} "
                    f"is named for its higher mean goodput, which this comparison does not show to be a clear "
                    "difference")
        return pick, why + "."

    def behind(self) -> list[tuple[str, int, float]]:
        """Return (arm, trial, share sent behind) of every trial in which the load generator fell behind."""
        return [(arm.name, t, share) for arm in self.plan.arms for t, f in sorted(self.trials.get(arm.name, {}).items())
                if (share := f.figures.behind()) is not None]

    def caution(self) -> str:
        """Return a warning when some trials ran behind their schedule (loadgen.behind), else ''."""
        slipped = self.behind()
        if not slipped:
            return ""
        done = sum(len(per) for per in self.trials.values())
        which = "; ".join(f"{self.letter(arm)} trial {t + 1}: {share:.0%}" for arm, t, share in slipped)
        return (f"{fell_behind(len(slipped), done, 'trials', which)}: those trials put a "
                "smoother, lighter load on the server than asked, and their figures describe that load, not the one "
                "compared. Run the comparison again with less running beside it or a lower rate before relying on it.")

    def intervals_note(self) -> str:
        """Return what the intervals' levels mean, as the page and the report say it under each table."""
        return (f"Goodput, p99 and throughput of all requests decide: their {self.family} intervals (these 3 for each "
                "configuration compared with A) hold together at 95 %, so each is wider than 95 % alone. Every other "
                "row stands alone at 95 %: among this many figures one may differ by chance — a lead, not a "
                "conclusion. Times and rates are compared as ratios: the difference is the geometric mean of the "
                "per-trial ratios B / A and its interval comes from their logarithms, so it never reaches −100 %.")


def _headline(cls: str, key: str) -> bool:
    """Return whether a figure is one the verdict rests on: a headline figure of all requests."""
    return cls == ALL and key in HEADLINE


def _value(figures: Figures, key: str, cls: str):
    return figures.client_value(key, cls) if key in CLIENT_KEYS else figures.server.get(key)


def run_ab(lab: StudyLab, plan: ABPlan | None = None, *, label: str = "", study_id: int | None = None,
           progress: Callable[[Progress], None] | None = None, cancel: threading.Event | None = None) -> ABResult:
    """Run (or resume, given study_id) a comparison on the lab's server; return its result. Blocks."""
    store = lab
    started = time.monotonic()
    if study_id is None:
        if plan is None:
            raise ValueError("a new comparison needs a plan")
        label = check_label(label, "the comparison's label") or fit(" vs ".join(a.name for a in plan.arms))
        start = Start.now(lab, plan.model)
        study_id = store.add_study(Study(
            "ab", label, plan.model,
            {"plan": plan.to_dict(), "start": start.to_dict()}, time.time(), base_config=start.text,
            env=environment(lab, plan.model)))
    else:
        study = store.study(study_id)
        if study.kind != "ab" or study.status == DONE:
            raise ValueError(f"study {study_id} is not an unfinished comparison")
        plan, start = ABPlan.from_dict(study.definition["plan"]), Start.of(study)
        store.update_study(study_id, status=RUNNING, owner=owner_tag(), note="")
    trials = load_trials(store, study_id)
    runner = _Trials(lab, plan, study_id, trials, progress, cancel or threading.Event())
    status, note = runner.conclude(runner.run, start.text, start.had_file)
    result = ABResult(study_id, plan, trials, status, note, time.monotonic() - started)
    store.update_study(study_id, status=status, note=note, result={
        "verdicts": {a.name: result.verdict(a.name) for a in plan.arms[1:]}, "wall_s": result.wall_s})
    runner.report(final=True)
    return result


def load_trials(store, study_id: int, problems: list[str] | None = None) -> dict[str, dict[int, Trial]]:
    """Return a comparison's stored trials that can be read: arm -> trial -> its figures and windows; a trial that
    cannot be read is left out (never raised), and what is wrong with it appended to problems when given."""
    out: dict[str, dict[int, Trial]] = {}
    for e in store.runs(study_id=study_id):
        if e.kind != "trial" or e.status != DONE:
            continue
        arm, _, trial = e.point.rpartition("#")
        why = e.broken or ("its name has no '<arm>#<trial>'" if not arm else "" if trial.isdigit()
                           else f"its trial number {trial!r} is not a whole number")
        if why:
            if problems is not None:
                problems.append(f"trial {e.point or '(unnamed)'!r} (run {e.id}) cannot be read: {why}")
            continue
        out.setdefault(arm, {})[int(trial)] = Trial.of(e)
    return out


class _Trials(StudyDriver):
    """The trial loop of one comparison."""

    what, kept = "comparison", "trials"

    def __init__(self, lab: StudyLab, plan: ABPlan, study_id: int, trials: dict, progress,
                 cancel: threading.Event) -> None:
        super().__init__(lab, plan.model, study_id, cancel, progress)
        self.plan, self.trials = plan, trials
        self.spec = plan.load_spec()
        self.state = Progress(study_id, total=plan.trials * len(plan.arms))
        self.state.done = sum(len(v) for v in trials.values())
        self.ran = 0

    def run(self) -> None:
        self.lab.stop_traffic("traffic stopped: an A/B comparison takes over")
        with self.lab.meter(self.plan.model, slas_of(self.spec)) as meter:
            for trial in range(self.plan.trials):
                for arm in self.plan.order(trial):
                    if trial in self.trials.get(arm.name, {}):
                        continue
                    if self.cancel.is_set():
                        raise Cancelled
                    self._one(meter, arm, trial)

    def _one(self, meter: Meter, arm: Arm, trial: int) -> None:
        self.state.current = f"trial {trial + 1} of {self.plan.trials}: {arm.name}"
        self.report()
        self._serve(arm)
        what = f"A/B trial {trial + 1} of {arm.name}"
        if self.plan.trace:
            windows = play(self, meter, self.spec, what)
            trace = score_of(windows, self.spec, self.plan.sla_ms(), served_instances(self.lab.served_config(
                self.plan.model))).to_dict()
        else:
            windows, trace = self.run_fixed(meter, self.spec, self.plan.warmup_s, self.plan.trial_s, what), None
        whole = merged(windows)
        figures = whole.figures(self.plan.model)
        exp = Experiment(f"{arm.name} — trial {trial + 1}", self.plan.model,
                         self.lab.served_text(self.plan.model), whole.t0, whole.t1, spec_to_dict(self.spec),
                         figures.client_dicts(), figures.server.to_dict(),
                         kind="trial", study_id=self.study_id, point=f"{arm.name}#{trial}", seed=self.spec.seed,
                         windows=[w.to_dict() for w in windows],
                         outcome={"arm": arm.name, "trial": trial, **({"score": trace} if trace else {})})
        exp_id = self.lab.add_run(exp)
        self.trials.setdefault(arm.name, {})[trial] = Trial(figures, exp.windows, exp_id, trace)
        self.ran += 1
        self.state.done += 1
        self.state.log.append(f"trial {trial + 1}, {arm.name}: {figures.get('throughput_rps') or 0:,.0f} req/s, p99 "
                              f"{figures.get('p99_ms') or float('nan'):,.1f} ms")
        self.report()

    def _serve(self, arm: Arm) -> None:
        """Serve the arm's whole config text, written as given (it is a config.pbtxt: the one serving, a sweep
        point's, a saved run's)."""
        try:
            self.serve(parse_config(arm.config_text), f"A/B: {arm.name}", whole=arm.config_text)
        except ConfigError as exc:
            raise Failed(f"{arm.name} could not be applied: {exc}") from exc

    def report(self, final: bool = False) -> None:
        self.publish(self.state, self.ran, final)


def ab_job(lab: StudyLab, plan: ABPlan, label: str = "") -> FunctionJob:
    """Return the job of a new comparison, for lab.start_job (ValueError for a label too long)."""
    check_label(label, "the comparison's label")
    return FunctionJob("ab", label or " vs ".join(a.name for a in plan.arms), lambda progress, cancel: run_ab(
        lab, plan, label=label, progress=progress, cancel=cancel))


def resumed_ab_job(lab: StudyLab, study_id: int) -> FunctionJob:
    """Return the job that resumes a stopped comparison: only the trials it has not run yet."""
    return FunctionJob("ab", f"comparison {study_id} (resumed)", lambda progress, cancel: run_ab(
        lab, study_id=study_id, progress=progress, cancel=cancel))
