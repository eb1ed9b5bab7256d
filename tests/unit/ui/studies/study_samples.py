"""Made-up sweeps, A/B comparisons and damaged studies in a FakeLab's store, stored as the lab stores them, for the
Experiments page's tests.

Every figure is invented (tests/unit/experiments/samples.py: a toy capacity model and log-normal latencies); the rows
are the real ones (Study, Experiment: points, repeats, trials), so the page reads them exactly as it reads a study
the lab ran. Nothing here touches a server.
"""
from __future__ import annotations

import dataclasses
import math
import sqlite3

import numpy as np

from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import ABPlan, ABResult, Arm
from app.experiments.driving import Start
from app.experiments.sweep.recommend import pooled, recommend
from app.experiments.sweep.space import SearchSpace
from app.experiments.sweep.sweeper import REPEAT, Point, SweepOptions
from app.lab.ports import Store
from app.timeline.meter import merged
from app.store.database import DONE, FAILED, Experiment, Study
from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from tests.unit.experiments import samples

CLOSE = {"i1-d0": 400.0, "i1-d2000": 560.0, "i2-d0": 700.0, "i2-d2000": 715.0}  # req/s: the best two 2 % apart
APART = {"i1-d0": 400.0, "i1-d2000": 560.0, "i2-d0": 600.0, "i2-d2000": 900.0}  # the best 50 % ahead


def sweep_space(**overrides) -> SearchSpace:
    """Return a made-up sweep's space of gpu_sim: 1 or 2 instances × delay 0 or 2000 µs, at four loads."""
    return SearchSpace(**{"model": "gpu_sim", "instances": (1, 2), "delays_us": (0, 2000), "include_default": False,
                          "loads": (1, 2, 4, 8), "p99_budget_ms": 50.0, "adaptive": False, **overrides})


def sweep_points(space: SearchSpace, capacity: dict[str, float], seed: int = 3, noise: float = 0.05,
                 t0: float = samples.T0) -> list[Point]:
    """Return made-up points: throughput rises with load to each configuration's capacity; each window's rate varies
    by ±noise, so every point shows a spread."""
    rng = np.random.default_rng(seed)
    base = parse_config(samples.BASE_CONFIG)
    points, t = [], t0
    for choice in space.choices():
        text = format_config(choice.config(base))
        for load in space.loads:
            cap = capacity[choice.key]
            rps = cap * (1 - math.exp(-load * 180 / cap))
            windows = [samples.window(t + 0.5 * k, 0.5, rps * (1 + noise * (k - 1)), 1000 * load / rps, rng,
                                      sla_ms=space.p99_budget_ms) for k in range(3)]
            whole = merged(windows)
            points.append(Point(choice, load, DONE, True, 0.01, whole.figures(), [w.to_dict() for w in windows], "",
                                text, t0=whole.t0, t1=whole.t1))
            t += 2.0
    return points


def repeat_best(space: SearchSpace, points: list[Point], seed: int = 4, lower: dict[str, float] | None = None
                ) -> dict[str, list[Point]]:
    """Return one made-up repeat of each configuration's best point inside the SLA (what the sweep re-measures),
    measured later, 2 % lower than the first time — or lower by {configuration key: share}."""
    firsts = {}
    for p in points:
        best = firsts.get(p.choice.key)
        if space.meets_sla(p.p99, p.throughput) and (best is None or p.goodput > best.goodput):
            firsts[p.choice.key] = p
    rng = np.random.default_rng(seed)
    out = {}
    for p in firsts.values():
        rps = p.throughput * (1 - (lower or {}).get(p.choice.key, 0.02))
        windows = [samples.window(p.t0 + 100 + 0.5 * k, 0.5, rps * (1 + 0.05 * (k - 1)), 1000 * p.load / rps, rng,
                                  sla_ms=space.p99_budget_ms) for k in range(3)]
        whole = merged(windows)
        out[p.key] = [dataclasses.replace(p, figures=whole.figures(), windows=[w.to_dict() for w in windows],
                                          t0=whole.t0, t1=whole.t1)]
    return out


def store_sweep(store: Store, space: SearchSpace, points: list[Point], repeats: dict[str, list[Point]],
                label: str) -> int:
    """Store a finished sweep as run_sweep stores one (its points, repeats and result); return its id."""
    start = Start(samples.BASE_CONFIG, samples.BASE_CONFIG)
    sid = store.add_study(Study("sweep", label, space.model, {
        "space": space.to_dict(), "options": dataclasses.asdict(SweepOptions(seed=11)), "start": start.to_dict()},
        samples.T0, base_config=samples.BASE_CONFIG, env=samples.ENV))
    for kind, point in [("point", p) for p in points] + [(REPEAT, r) for rs in repeats.values() for r in rs]:
        store.add_run(Experiment(f"{point.choice.label} @ {point.load:g}", space.model, point.config_text, point.t0,
                             point.t1, client=point.figures.client_dicts(), server=point.figures.server.to_dict(),
                             kind=kind,
                             status=point.status, study_id=sid, point=point.key, seed=11, windows=point.windows,
                             outcome={"stable": point.stable, "change": point.change, "note": point.note,
                                      "load": point.load, "choice": point.choice.key}))
    advice = recommend(space, [pooled(p, repeats.get(p.key, [])) for p in points])
    store.update_study(sid, status=DONE, note="the starting config serves again", result={
        "best": advice.best.key if advice else None, "points": len(points), "skipped": [],
        "repeats": sum(map(len, repeats.values())), "recommendation": advice.to_dict() if advice else None})
    return sid


def store_ab(store: Store, result: ABResult, label: str) -> int:
    """Store a finished comparison as run_ab stores one (its plan and every trial); return its id."""
    sid = store.add_study(Study("ab", label, result.plan.model, {"plan": result.plan.to_dict()}, samples.T0,
                                base_config=samples.BASE_CONFIG, env=samples.ENV))
    for arm in result.plan.arms:
        for trial, f in sorted(result.trials.get(arm.name, {}).items()):
            store.add_run(Experiment(f"{arm.name} — trial {trial + 1}", result.plan.model, arm.config_text,
                                 f.figures.t0, f.figures.t1, client=f.figures.client_dicts(),
                                 server=f.figures.server.to_dict(), kind="trial", study_id=sid,
                                 point=f"{arm.name}#{trial}", windows=f.windows,
                                 outcome={"arm": arm.name, "trial": trial}))
    store.update_study(sid, status=DONE)
    return sid


# --- studies the page must survive: stored whole, then damaged in SQLite as a crash or a hand edit leaves them ----

REFUSED = "dynamic_batching: needs max_batch_size > 0"


def plain_sweep(store: Store, label: str, keys: dict[str, str], status: str = DONE, note: str = "",
                model: str = "gpu_sim", **result) -> int:
    """Store a sweep of 1 or 2 instances at loads 1 and 4 whose points (keys: {key: status}) hold made-up figures (a
    refused point says the server's words); return its id."""
    space = SearchSpace(model=model, instances=(1, 2), delays_us=(), include_default=False, loads=(1, 4),
                        p99_budget_ms=50.0, adaptive=False)
    sid = store.add_study(Study("sweep", label, model, {"space": space.to_dict()}, samples.T0, status=status,
                                note=note, result=result))
    store.update_study(sid, status=status, note=note)
    for key, point_status in keys.items():
        done = point_status == DONE
        client = {"all": {"p99_ms": 5.0 + len(key), "throughput_rps": 400.0, "goodput_rps": 400.0,
                          "latency_n": 4000}} if done else {}
        store.add_run(Experiment(f"{label} {key}", model, f'name: "{model}"\n', 1.0, 2.0, client=client,
                                 kind="point", status=point_status, study_id=sid, point=key,
                                 outcome={"stable": done, "change": 0.01 if done else None,
                                          "note": "" if done else f"could not be applied: {REFUSED}"}))
    return sid


def plain_comparison(store: Store, label: str, model: str = "gpu_sim") -> int:
    """Store a finished A/B of max_batch_size 8 against 16, two trials each; return its id."""
    spec = spec_to_dict(LoadSpec(mode=Mode.OPEN, rate=10.0, model=model, seed=1))
    plan = ABPlan(model, (Arm("A", f'name: "{model}"\nmax_batch_size: 8\n'),
                          Arm("B", f'name: "{model}"\nmax_batch_size: 16\n')), spec, trials=2, trial_s=1.0)
    sid = store.add_study(Study("ab", label, model, {"plan": plan.to_dict()}, samples.T0, status=DONE))
    store.update_study(sid, status=DONE)
    for point in ("A#0", "B#0", "A#1", "B#1"):
        store.add_run(Experiment(f"{label} {point}", model, "cfg", 1.0, 2.0, kind="trial", study_id=sid, point=point,
                                 client={"all": {"p99_ms": 5.0, "throughput_rps": 10.0, "goodput_rps": 10.0}}))
    return sid


def damaged_studies(lab) -> dict[str, int]:
    """Store a whole sweep, a failed one, sweeps, comparisons, an autopilot run, a trace sweep and a saved run
    damaged in the lab's SQLite store (lab.store_path); return their ids by name ('run': the saved run's). The newest
    sweep and comparison (the ones a page draws first) cannot be read: a page draws no chart before one is picked."""
    ids = {
        "whole": plain_sweep(lab, "whole sweep", {"i1@1": DONE, "i1@4": DONE, "i2@1": FAILED}, best="i1@4",
                             points=3),
        "failed": plain_sweep(lab, "failed sweep", {"i1@1": FAILED, "i2@1": FAILED}, FAILED,
                              f"failed: none of the 2 configurations could be applied to gpu_sim: {REFUSED}"),
        "missing_point": plain_sweep(lab, "missing point", {"i1@1": DONE, "i1@4": DONE, "i2@4": DONE}, best="i2@4",
                                     points=3),
        "bad_json": plain_sweep(lab, "bad json", {"i1@1": DONE}),
        "null_number": plain_sweep(lab, "null budget", {"i1@1": DONE}),
        "wrong_shape": plain_sweep(lab, "wrong shape", {"i1@1": DONE}),
        "ab_whole": plain_comparison(lab, "whole comparison"),
        "ab_wrong_shape": plain_comparison(lab, "wrong plan"),
        "pilot_wrong": lab.add_study(Study("autopilot", "broken autopilot", "gpu_sim", {"bounds": [1, 2]}, samples.T0,
                                           status=DONE, result={"records": "x"})),
        "trace_wrong": lab.add_study(Study("trace_sweep", "broken trace sweep", "gpu_sim", {"plan": [1]}, samples.T0,
                                           status=DONE)),
        "run": lab.add_run(Experiment("damaged run", "gpu_sim", "cfg", 1.0, 2.0, client={"all": {"p99_ms": 1.0}})),
    }
    with sqlite3.connect(lab.store_path) as db:
        for sql, args in (
                ("UPDATE studies SET definition = '{\"space\": {\"loads\": [1,' WHERE id = ?", (ids["bad_json"],)),
                ("UPDATE studies SET definition = json_set(definition, '$.space.p99_budget_ms', NULL) WHERE id = ?",
                 (ids["null_number"],)),
                ("UPDATE studies SET definition = '{\"space\": [1, 2]}' WHERE id = ?", (ids["wrong_shape"],)),
                ("DELETE FROM experiments WHERE study_id = ? AND point = 'i2@4'", (ids["missing_point"],)),
                ("UPDATE experiments SET client = '{\"all\": ' WHERE study_id = ? AND point = 'i1@4'",
                 (ids["missing_point"],)),
                ("UPDATE experiments SET started_at = NULL, client = '{\"all\": {\"p99_ms\": \"fast\"}}' "
                 "WHERE study_id = ? AND point = 'A#1'", (ids["ab_whole"],)),
                ("UPDATE studies SET definition = '{\"plan\": {\"arms\": \"A\"}}' WHERE id = ?",
                 (ids["ab_wrong_shape"],)),
                ("UPDATE experiments SET client = '[]', windows = '{' WHERE id = ?", (ids["run"],))):
            db.execute(sql, args)
    return ids
