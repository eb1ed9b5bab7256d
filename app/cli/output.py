"""What `python -m app.experiments` prints and writes: a study's summary lines and its JSON (strict: no NaN)."""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

from app.metrics.catalog import fmt
from loadgen.stats import ALL

FIGURES = ("throughput_rps", "goodput_rps", "p50_ms", "p99_ms", "ok", "failed", "avg_batch", "queue_us", "compute_us")


def sweep_summary(result, options, where: str, code: int, twin: list[dict] | None = None) -> tuple[dict, list[str]]:
    """Return the JSON of a finished sweep and the lines that say how it ended (twin: the stored ranking of a
    twin-ranked sweep, each configuration's prediction beside what was measured of it)."""
    space, best = result.space, result.best
    done = [p for p in result.points if p.status == "done"]
    lines = [f"sweep of {space.model}: {result.status} in {result.wall_s:,.0f} s — {len(done)} points measured over "
             f"{len({p.choice.key for p in done})} configurations" + (f" ({result.note})" if result.note else "")]
    failed = {p.choice.label: p.note for p in result.points if p.status != "done"}
    lines += [f"could not be applied: {label}: {note.removeprefix('could not be applied: ')}"
              for label, note in failed.items()]
    if best is not None:
        lines.append(f"operating point: {best.choice.label} at {_load(space, best.load)}: "
                     f"{fmt('goodput_rps', best.goodput)} goodput, p99 {fmt('p99_ms', best.p99)} (budget "
                     f"{space.p99_budget_ms:g} ms), throughput {fmt('throughput_rps', best.throughput)}")
        if caution := best.caution():
            lines.append(f"caution: {caution}")
    elif result.status == "done":
        lines.append(f"no configuration kept p99 within {space.p99_budget_ms:g} ms"
                     + (f" with at least {space.min_throughput_rps:g} req/s" if space.min_throughput_rps else "")
                     + " at any load measured: no operating point")
    advice = result.recommendation
    if advice is not None:
        lines.append(f"recommendation: {advice.text}")
    if twin:
        from app.experiments.sweep.twin_rank import ranking_error  # noqa: PLC0415 - the twin's modules, for a ranking only
    for place, r in enumerate(twin or (), 1):
        if not r.get("measured"):
            continue
        said = ("none inside the SLA" if r.get("load") is None else
                f"{r['predicted_goodput_rps']:,.0f} req/s at {_load(space, r['load'])}")
        seen = ("none inside the SLA" if r.get("measured_goodput_rps") is None else
                f"{r['measured_goodput_rps']:,.0f} at {_load(space, r['measured_load'])}")
        off = f" ({error:+.0%})" if (error := ranking_error(r)) is not None else ""
        lines.append(f"the twin's #{place}, {r.get('label', r.get('choice'))}: predicted {said}, measured {seen}{off}")
    data = {"kind": "sweep", "model": space.model, "server": where, "study_id": result.study_id,
            "status": result.status, "note": result.note, "wall_s": result.wall_s, "exit_code": code,
            "space": space.to_dict(), "options": dataclasses.asdict(options),
            "operating_point": None if best is None else _point(space, best),
            "recommendation": advice.to_dict() if advice is not None else None,
            "points": [_point(space, p) for p in result.points], "skipped": list(result.skipped),
            "twin": list(twin or [])}
    return data, lines


def _point(space, p) -> dict:
    return {"key": p.key, "config": p.choice.key, "configuration": p.choice.label, "load": p.load,
            "load_kind": space.load_kind, "status": p.status, "stable": p.stable, "note": p.note,
            "caution": p.caution(), "within_sla": space.meets_sla(p.p99, p.throughput),
            "sla": space.sla_state(p.p99, p.throughput),
            **{k: p.get(k) for k in FIGURES}, "config_text": p.config_text, "figures": p.figures.to_dict()}


def _load(space, load: float) -> str:
    return f"concurrency {load:g}" if space.load_kind == "concurrency" else f"{load:g} req/s"


def ab_summary(result, typed: list[tuple[str, str, str]], defined: list, where: str) -> tuple[dict, list[str], bool]:
    """Return the JSON of a finished comparison, the lines that say how it ended, and whether some arm differs
    clearly from the baseline on a headline figure (goodput, p99 or throughput of all requests: the intervals that
    hold together at 95 %). typed: (letter, as typed, the arm's text) of each arm."""
    from app.experiments.ab.comparison import HEADLINE  # noqa: PLC0415

    plan = result.plan
    done = {a.name: len(result.trials.get(a.name, {})) for a in plan.arms}
    lines = [f"A/B of {plan.model}: {result.status} in {result.wall_s:,.0f} s — trials per arm: "
             + ", ".join(f"{n}" for n in done.values()) + (f" ({result.note})" if result.note else "")]
    differences, clear = {}, False
    for arm in plan.arms[1:]:
        diffs = result.differences(arm.name)
        differences[arm.name] = [{"class": cls, **_difference(d)} for cls, d in diffs]
        clear = clear or any(d.clear for cls, d in diffs if cls == ALL and d.key in HEADLINE)
        lines.append(result.verdict(arm.name))
    if caution := result.caution():
        lines.append(f"caution: {caution}")
    pick, why = result.recommendation() if result.status == "done" else (None, "")
    if pick is not None:
        lines.append(f"recommendation: {why}")
    arms = [{"letter": letter, "name": arm.name, "typed": as_typed, "changes": list(d.changes),
             "config_text": arm.config_text, "trials": {k: result.values(arm.name, k) for k in (*HEADLINE, "p50_ms")}}
            for (letter, as_typed, _), d, arm in zip(typed, defined, plan.arms)]
    data = {"kind": "ab", "model": plan.model, "server": where, "study_id": result.study_id, "status": result.status,
            "note": result.note, "wall_s": result.wall_s, "plan": plan.to_dict(), "arms": arms,
            "verdicts": {a.name: result.verdict(a.name) for a in plan.arms[1:]}, "differences": differences,
            "clear_difference": clear, "recommendation": {"arm": pick, "why": why}, "caution": caution}
    return data, lines, clear


def _difference(d) -> dict:
    out = dataclasses.asdict(d) if dataclasses.is_dataclass(d) else {}
    for name in ("relative", "relative_interval", "clear", "level_text"):
        value = getattr(d, name, None)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def jsonable(value):
    """Return value with tuples as lists, numpy scalars as Python's and every non-finite number as None (strict JSON
    has no NaN)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return value


def write_outputs(data: dict, json_path: Path | None, report_path: Path | None, html: Callable[[], str]) -> None:
    """Write the JSON (strict) and the HTML report where asked."""
    if json_path is not None:
        json_path.write_text(json.dumps(jsonable(data), indent=1, default=str, allow_nan=False))
    if report_path is not None:
        report_path.write_text(html())
