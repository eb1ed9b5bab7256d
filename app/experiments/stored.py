"""Stored sweeps and comparisons read for showing: what can be shown, and what is wrong with the rest.

Nothing here raises. A study whose definition cannot be read is `broken` (saying why): it can only be
deleted. One with some points or trials that cannot be read, or a result naming a point no longer
stored, is shown from what can be read, its `problems` listed.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from app.experiments.ab.comparison import ABPlan, load_trials
from app.experiments.sweep.space import SearchSpace
from app.store.database import FAILED, RUNNING, Study
from app.experiments.sweep.sweeper import Point, load_points


@dataclass(frozen=True)
class SweepRecord:
    """A stored sweep as far as it reads: its space and points, and what is wrong with the rest."""

    study: Study
    space: SearchSpace | None  # None: the definition cannot be read, and broken says why
    points: list[Point] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # loads the adaptive search left out, in words
    problems: tuple[str, ...] = ()  # what was left out or does not add up
    broken: str = ""  # why the sweep cannot be shown at all ('' when it can)


@dataclass(frozen=True)
class ABRecord:
    """A stored comparison as far as it reads: its plan and trials, and what is wrong with the rest."""

    study: Study
    plan: ABPlan | None  # None: the definition cannot be read, and broken says why
    trials: dict = field(default_factory=dict)  # arm -> trial -> ab.trial.Trial (ab.load_trials)
    problems: tuple[str, ...] = ()
    broken: str = ""


_KIND_WORDS = {"sweep": "sweep", "ab": "comparison", "scenario": "scenario"}


def _reason(exc: Exception) -> str:
    """Return an error in words: a ValueError's own message (it says what is wrong), else its type and text."""
    if isinstance(exc, KeyError):
        return f"{exc.args[0] if exc.args else exc} is missing"
    return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"


def _definition(study: Study, kind: str, part: str) -> dict:
    """Return the named part of a study's definition; ValueError saying what is wrong with it."""
    if study.kind != kind:
        stored = _KIND_WORDS.get(study.kind, repr(study.kind) if study.kind else "study of no kind")
        raise ValueError(f"it is stored as a {stored}, not a {_KIND_WORDS[kind]}")
    value = study.definition.get(part)
    if not isinstance(value, dict):
        found = "nothing" if value is None else f"{type(value).__name__} {value!r:.40}"
        raise ValueError(f"its definition has no {part} mapping (found {found})")
    return value


def _no_nulls(cls, data: dict, what: str) -> dict:
    """Return data; ValueError naming a field stored as null that must hold a value (a number, a list)."""
    for f in fields(cls):
        if f.name in data and data[f.name] is None and f.default is not None:  # None is a value only by default
            raise ValueError(f"its {what}'s {f.name} is null")
    return data


def _broken(study: Study, what: str, exc: Exception) -> str:
    """Return why a study cannot be shown: its row's own problems first (they are usually the cause)."""
    if study.broken and not study.definition:  # the definition column itself could not be read: that says it all
        return study.broken
    cause = f"its definition cannot be read as a {what} ({_reason(exc)})"
    return f"{study.broken}; {cause}" if study.broken else cause


def _space(study: Study) -> SearchSpace:
    return SearchSpace.from_dict(_no_nulls(SearchSpace, _definition(study, "sweep", "space"), "search space"))


def _plan(study: Study) -> ABPlan:
    return ABPlan.from_dict(_no_nulls(ABPlan, _definition(study, "ab", "plan"), "plan"))


_READERS = {"sweep": (_space, "sweep"), "ab": (_plan, "comparison")}


def unreadable(study: Study) -> str:
    """Return why a listed study cannot be read whole — its row, or its definition — without reading its runs; ''
    when nothing is wrong with either (a list marks the study; its page says the rest)."""
    read, what = _READERS.get(study.kind, (None, ""))
    if read is None:
        return study.broken
    try:
        read(study)
    except Exception as exc:  # noqa: BLE001 - any shape of damage
        return _broken(study, what, exc)
    return study.broken


def _read(store, study: Study, kind: str, load, rows: str) -> tuple:
    """Read a study's definition by its kind's reader, then its rows with load(store, id, problems); return
    (definition, rows, problems, broken) — broken says why it cannot be shown, with what could be read before."""
    read, what = _READERS[kind]
    try:
        definition = read(study)
    except Exception as exc:  # noqa: BLE001 - any shape of damage: the study is shown as broken
        return None, None, [], _broken(study, what, exc)
    problems = [f"its stored row: {study.broken}"] if study.broken else []
    try:
        return definition, load(store, study.id, problems), problems, ""
    except Exception as exc:  # noqa: BLE001 - e.g. the store's file cannot be read
        return definition, None, problems, f"its {rows} cannot be read ({_reason(exc)})"


def read_sweep(store, study: Study) -> SweepRecord:
    """Return a stored sweep as far as it can be read (never raises)."""
    space, points, problems, broken = _read(store, study, "sweep", load_points, "points")
    if broken:
        return SweepRecord(study, space, broken=broken)
    result = study.result
    skipped = result.get("skipped") or []
    if not isinstance(skipped, list) or not all(isinstance(s, str) for s in skipped):
        problems.append("its list of loads not measured cannot be read")
        skipped = []
    keys = {p.key for p in points}
    best = result.get("best")
    if study.status != RUNNING and isinstance(best, str) and best not in keys:
        problems.append(f"its result named the point {best!r} as the operating point, and that point is not stored "
                        "any more (or cannot be read)")
    counted = result.get("points")
    if study.status != RUNNING and isinstance(counted, int) and counted > len(points):
        problems.append(f"its result counted {counted} points; {len(points)} can be read")
    return SweepRecord(study, space, points, skipped, tuple(problems))


def read_ab(store, study: Study) -> ABRecord:
    """Return a stored comparison as far as it can be read (never raises)."""
    plan, trials, problems, broken = _read(store, study, "ab", load_trials, "trials")
    if broken:
        return ABRecord(study, plan, broken=broken)
    names = {a.name for a in plan.arms}
    for arm in sorted(set(trials) - names):
        problems.append(f"trials of {arm!r}, a configuration the plan does not name, are left out")
        trials.pop(arm)
    for arm, per in trials.items():
        for t in sorted(t for t in per if t >= plan.trials):
            problems.append(f"trial {t + 1} of {arm!r} is past the plan's {plan.trials} trials and is left out")
            per.pop(t)
    return ABRecord(study, plan, trials, tuple(problems))


def refusals(points: list[Point]) -> list[str]:
    """Return one line per configuration that could not be applied: its name and the server's reason."""
    out: dict[str, str] = {}
    for p in points:
        if p.status == FAILED:
            out.setdefault(p.choice.label, p.note.removeprefix("could not be applied: ") or "no reason was stored")
    return [f"{name}: {why}" for name, why in out.items()]
