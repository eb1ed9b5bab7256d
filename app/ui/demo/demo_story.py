"""The story /demo tells while a study runs: its claim, the phase under way with progress, each phase's narration,
then the verdict in plain sentences — for a guided scenario, a sweep or an A/B comparison, running or stored.

Built from the lab's one job (app.lab.jobs.JobState) and the experiment store; no Streamlit here
(app.ui.demo.demo_layout draws a Story). Every text a person typed (a study's label, an arm's name) is kept as
typed: the page escapes whatever it shows.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.experiments.ab.comparison import ABResult
from app.experiments.sweep.recommend import operating_point
from app.experiments.sweep.space import CONCURRENCY
from app.lab.ports import Store, Studies
from app.store.database import DONE, RUNNING, Study
from app.experiments.stored import read_ab, read_sweep
from app.ui.demo.demo_words import CheckWords, check_words, figure, tidy

log = logging.getLogger(__name__)

KINDS = {"scenario": "Guided scenario", "sweep": "Sweep", "ab": "A/B comparison"}


@dataclass(frozen=True)
class PhaseLine:
    """One phase of a scenario (or step of a study) as the audience follows it."""

    name: str
    narration: str
    state: str  # done | now | next


@dataclass(frozen=True)
class Verdict:
    """How a study ended, in sentences: held or not (None when it is a finding, not a yes or no)."""

    held: bool | None
    headline: str
    checks: tuple[CheckWords, ...] = ()
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Story:
    """What /demo's story line shows about one study."""

    kind: str  # scenario | sweep | ab
    title: str
    claim: str
    model: str
    running: bool
    done: int = 0
    total: int = 0
    current: str = ""
    narration: str = ""
    eta_s: float | None = None
    phases: tuple[PhaseLine, ...] = ()
    verdict: Verdict | None = None
    study_id: int | None = None

    @property
    def what(self) -> str:
        """Return the kind in words, e.g. 'Guided scenario'."""
        return KINDS.get(self.kind, "Study")


def job_story(lab: Studies) -> Story | None:
    """Return the story of the lab's current (or last) job, None when there has been none this process."""
    state = lab.job()
    if state is None:
        return None
    running = lab.job_running()
    study = None
    if state.study_id is not None:
        try:
            study = lab.study(state.study_id)
        except Exception:  # noqa: BLE001 - not stored yet, or deleted: the job's own state still tells
            study = None
    if study is None:
        verdict = Verdict(False, f"It could not run: {tidy(state.error)}") if state.error and not running else None
        return Story(state.kind, state.label, "", "", running, verdict=verdict)
    return study_story(lab, study, progress=state.progress if running else None, running=running)


def study_story(lab: Studies, study: Study, progress=None, running: bool = False) -> Story:
    """Return the story of one stored study: while it runs (progress), or finished with its verdict."""
    build = {"scenario": _scenario, "sweep": _sweep, "ab": _ab}.get(study.kind)
    if build is None:
        return Story(study.kind, study.label, "", study.model, running, study_id=study.id)
    try:
        return build(lab, study, progress, running)
    except Exception as exc:  # noqa: BLE001 - a study that cannot be told is said so, never a broken page
        log.exception("the story of study %s cannot be told", study.id)
        return Story(study.kind, study.label, "", study.model, running, study_id=study.id,
                     verdict=Verdict(None, f"This study cannot be shown: {type(exc).__name__}."))


def _progress_fields(progress, total: int) -> dict:
    if progress is None:
        return {"total": total}
    return {"done": int(getattr(progress, "done", 0) or 0), "total": int(getattr(progress, "total", 0) or total),
            "current": str(getattr(progress, "current", "") or ""),
            "narration": str(getattr(progress, "narration", "") or ""), "eta_s": getattr(progress, "eta_s", None)}


def _ended(study: Study) -> Verdict | None:
    """Return the verdict of a study that stopped before its end (None when it ran to it)."""
    if study.status in (DONE, RUNNING):
        return None
    note = tidy(study.note or "no reason recorded")
    return Verdict(None, f"It stopped before its verdict ({study.status}): {note}")


# --- guided scenarios -----------------------------------------------------------------------------------------
def _scenario(lab: Studies, study: Study, progress, running: bool) -> Story:
    definition = study.definition
    narrations = _narrations(definition)
    names = [p.get("name", "") for p in definition.get("phases") or []] or list(narrations)
    fields = _progress_fields(progress, len(names)) if running else {"done": len(names), "total": len(names)}
    done = fields.get("done", 0)
    lines = []
    for i, name in enumerate(names):
        state = "done" if i < done else ("now" if name == fields.get("current") else "next")
        narration = fields["narration"] if state == "now" and fields.get("narration") else narrations.get(name, "")
        lines.append(PhaseLine(name, narration, state))
    verdict = None
    if not running:
        verdict = _ended(study) or _checks(study.result.get("checks") or [])
    return Story("scenario", study.label, str(definition.get("expect") or ""), study.model, running,
                 phases=tuple(lines), verdict=verdict, study_id=study.id, **fields)


def _narrations(definition: dict) -> dict[str, str]:
    """Return each phase's narration from the scenario's definition in the catalog ({} when it is not there)."""
    from app.scenarios.claims import SCENARIOS  # noqa: PLC0415 - the catalog builds every scenario's phases

    scenario = SCENARIOS.get(str(definition.get("scenario")))
    if scenario is None:
        return {}
    return {p.name: p.narration for p in scenario.phases(bool(definition.get("full")))}


def _checks(checks: list[dict]) -> Verdict:
    said = tuple(check_words(c) for c in checks if isinstance(c, dict))
    if not said:
        return Verdict(None, "It ended without a verdict.")
    held = all(c.ok for c in said)
    kept = sum(c.ok for c in said)
    head = ("The claim held: every check passed." if held else
            f"The claim did not hold: {kept} of {len(said)} checks passed.")
    return Verdict(held, head, said)


# --- sweeps ------------------------------------------------------------------------------------------------------
def _sweep(lab: Studies, study: Study, progress, running: bool) -> Story:
    record = read_sweep(lab, study)
    space = record.space
    budget = f"{space.p99_budget_ms:g} ms" if space is not None else "its budget"
    claim = f"Which configuration answers the most requests on time, with 99 % of answers within {budget}?"
    fields = _progress_fields(progress, 0)
    verdict = None
    if not running:
        verdict = _ended(study)
        if verdict is None and space is not None:
            best = operating_point(space, record.points)
            if best is None:
                verdict = Verdict(None, f"No configuration answered 99 % of requests within {budget}.")
            else:
                load = f"{best.load:g} requests in flight" if space.load_kind == CONCURRENCY else \
                    f"{best.load:g} requests per second"
                verdict = Verdict(None, f"Best: {best.choice.label}, at {load}.", lines=(
                    f"{figure('goodput_rps', best.goodput)} answered on time, 99 % of answers within "
                    f"{figure('p99_ms', best.p99)} ({len(record.points)} points measured).",))
    return Story("sweep", study.label, claim, study.model, running, verdict=verdict, study_id=study.id, **fields)


# --- A/B comparisons ---------------------------------------------------------------------------------------------
def _ab(lab: Studies, study: Study, progress, running: bool) -> Story:
    record = read_ab(lab, study)
    plan = record.plan
    fields = _progress_fields(progress, 0)
    if plan is None:
        return Story("ab", study.label, "", study.model, running, verdict=Verdict(None, "It cannot be read."),
                     study_id=study.id, **fields)
    result = ABResult(study.id, plan, record.trials, study.status, study.note)
    others = " and ".join(result.title(a.name) for a in plan.arms[1:])
    claim = (f"Is {others} better than {result.title(plan.arms[0].name)}? Each is measured {plan.trials} times "
             "under the same traffic, in turns.")
    verdict = None
    if not running:
        verdict = _ended(study)
        if verdict is None and result.trials:
            pick, why = result.recommendation()
            lines = tuple(tidy(line) for arm in plan.arms[1:] for line in result.findings(arm.name))
            verdict = Verdict(None, f"Serve {tidy(why)}", lines=lines)
    return Story("ab", study.label, claim, study.model, running, verdict=verdict, study_id=study.id, **fields)


@dataclass(frozen=True)
class Stored:
    """A finished study the presenter can put on /demo."""

    id: int
    kind: str
    label: str
    when: float
    reportable: bool = field(default=False)  # a sweep or comparison: it has an HTML report


def finished_studies(lab: Store, limit: int = 20) -> list[Stored]:
    """Return the newest finished studies (scenario, sweep, A/B), newest first."""
    out = []
    for study in lab.studies():
        if study.status == RUNNING or study.kind not in KINDS or study.broken:
            continue
        out.append(Stored(study.id, study.kind, study.label, study.ended_at or study.created_at,
                          study.kind in ("sweep", "ab")))
        if len(out) >= limit:
            break
    return out


def report_html(lab: Store, study_id: int) -> str | None:
    """Return the self-contained HTML report of a stored sweep or comparison (None for anything else)."""
    from app.experiments.report import html_report as report  # noqa: PLC0415 - Altair to SVG: only when a report is asked for

    study = lab.study(study_id)
    if study.kind == "sweep":
        record = read_sweep(lab, study)
        return None if record.space is None else report.sweep_report(study, record.points, record.space)
    if study.kind == "ab":
        record = read_ab(lab, study)
        if record.plan is None:
            return None
        return report.ab_report(study, ABResult(study.id, record.plan, record.trials, study.status, study.note))
    return None
