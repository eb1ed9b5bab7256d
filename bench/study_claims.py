"""The studies' claims, measured: python -m bench.study_claims [--only NAME ...] [--repeat N] [--json OUT].

What the test suite used to assert on a live server (and on seeded made-up comparisons), measured here instead:
printed as figures with the margin each claim is held to, never gating CI. The studies' behaviour — what they
store, restore and refuse — is tested (tests/unit/experiments, tests/contract/experiments); whether they find what
they should is this script's. One embedded server on a temporary copy of model_repository/ serves every live part.

  ab-false-calls  made-up identical arms, 4,000 seeded comparisons each of 2 and 3 arms: how often a headline
                  difference (goodput, p99, throughput) is called by chance — held together (at most 6 %, Bonferroni's
                  5 % plus the sample's wobble) against each figure alone at 95 % (14 % for 3 figures, 26 % for 6)
  ab-live         gpu_sim at 80 req/s: a 20 ms queue delay against none (B must be better on p99, its interval's
                  upper end below zero, goodput unclear); the same config twice (no clear difference, min effect
                  25 %); a 50 ms delay at 50 req/s with a 30 ms SLA (goodput over 30 % lower, p99 above 45 ms)
  sweep           the operating point the cost model implies: max_batch_size 1 vs 32 at 0.4× and 1.8× of one
                  unbatched instance's capacity — batching at the high rate; unbatched there over the budget, within
                  1.15× the capacity; the operating point carries over 0.9× the offered rate
  trace-sweep     a crowd (100 → 550 → 100 req/s, 9 s) on gpu_sim at max batch 4: three instances hold the SLA
                  (≤ 1 s over of 9), one does not (≥ 3 s over), the same arrivals for both; the pick is 3 instances
  diagnosis       no queue delay under a light load (20 req/s): the diagnosis names batch size stuck at 1 alone

Each part prints what it measured and 'held' or 'NOT HELD'; the exit code is 1 when a claim did not hold.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from app.lab.ports import LabPort
from app.config.edits import set_settings
from app.config.knobs import apply_knobs
from app.config.model_config import format_config, parse_config
from app.config.read import parameters_of, settings_of

MODEL = "gpu_sim"
PARTS = ("ab-false-calls", "ab-live", "sweep", "trace-sweep", "diagnosis")
LIVE = set(PARTS) - {"ab-false-calls"}


def said(claims: list[dict], name: str, held: bool, measured: str) -> None:
    """Print one claim's figures and whether it held; keep it for the summary."""
    claims.append({"claim": name, "held": bool(held), "measured": measured})
    print(f"{'held    ' if held else 'NOT HELD'}  {name}: {measured}", flush=True)


# --- A/B: false calls on made-up identical arms (the confidence rule alone) ---------------------------------------
def ab_false_calls(claims: list[dict], runs: int = 4000) -> None:
    from app.experiments.ab.comparison import HEADLINE, ABPlan, ABResult, Arm  # noqa: PLC0415
    from app.experiments.ab.confidence import paired  # noqa: PLC0415
    from app.experiments.ab.trial import Trial  # noqa: PLC0415
    from app.store.database import DONE  # noqa: PLC0415
    from app.timeline.figures import Figures  # noqa: PLC0415
    from app.timeline.sides import client_rows  # noqa: PLC0415
    from loadgen.stats import ALL  # noqa: PLC0415

    means = {"throughput_rps": 400.0, "goodput_rps": 390.0, "p99_ms": 40.0, "p50_ms": 20.0, "rejected": 3.0}
    for arms in (2, 3):
        rng = random.Random(20261201 + arms)
        plan = ABPlan(MODEL, tuple(Arm(f"arm{i}", 'name: "gpu_sim"\n') for i in range(arms)), {}, trials=4,
                      min_effect=0.0)
        alone = together = 0
        for _ in range(runs):
            trials = {a.name: {t: Trial(Figures(client=client_rows({ALL: {k: m * rng.gauss(1, 0.05)
                                                                          for k, m in means.items()}})))
                               for t in range(plan.trials)} for a in plan.arms}
            result = ABResult(1, plan, trials, DONE)
            base = plan.arms[0].name
            together += any(d.clear for a in plan.arms[1:] for c, d in result.differences(a.name)
                            if c == ALL and d.key in HEADLINE)
            alone += any(paired(k, result.values(base, k), result.values(a.name, k), 0.0).clear
                         for a in plan.arms[1:] for k in HEADLINE)
        said(claims, f"identical arms called different at most 6 % of the time ({arms} arms, {runs:,} comparisons)",
             together / runs <= 0.06 and alone / runs >= 0.10,
             f"{together / runs:.1%} held together, {alone / runs:.1%} with each figure at 95 % alone")


# --- A/B on the live server ---------------------------------------------------------------------------------------
def _arms(lab: LabPort, *delays_us):
    from app.experiments.ab.comparison import Arm  # noqa: PLC0415
    from app.experiments.sweep.space import Choice  # noqa: PLC0415

    base = parse_config(lab.served_text(MODEL))
    return tuple(Arm(name, format_config(Choice(delay_us=d).config(base))) for name, d in zip("AB", delays_us))


def ab_live(lab: LabPort, claims: list[dict]) -> None:
    from app.experiments.ab.comparison import ABPlan, run_ab  # noqa: PLC0415
    from app.experiments.ab.confidence import BETTER, UNCLEAR  # noqa: PLC0415
    from loadgen.spec import LoadSpec, Mode, TrafficClass  # noqa: PLC0415
    from loadgen.specfile import spec_to_dict  # noqa: PLC0415

    spec = spec_to_dict(LoadSpec(mode=Mode.OPEN, rate=80.0, model=MODEL, seed=11))
    result = run_ab(lab, ABPlan(MODEL, _arms(lab, 20000, 0), spec, trials=12, trial_s=1.5, warmup_s=0.5))
    diffs = {d.key: d for cls, d in result.differences("B") if cls == "all"}
    p99, good = diffs.get("p99_ms"), diffs.get("goodput_rps")
    said(claims, "a 20 ms queue delay loses to none on p99 at 80 req/s (interval excludes zero)",
         result.status == "done" and p99 is not None and p99.verdict == BETTER and p99.high < 0
         and good is not None and good.verdict == UNCLEAR,
         f"{result.status}; p99 A {_values(result, 'A')} ms, B {_values(result, 'B')} ms; B's p99 "
         f"{_interval(p99)} of A's; goodput {good.verdict if good else 'not measured'}. {result.caution()}")

    same = run_ab(lab, ABPlan(MODEL, _arms(lab, None, None), spec, trials=4, trial_s=2.5, warmup_s=1.0,
                              min_effect=0.25))
    said(claims, "the same config twice gives no clear difference (min effect 25 %)",
         same.status == "done" and "no clear difference in goodput, p99 or throughput" in same.verdict("B").lower(),
         f"{same.status}; {same.verdict('B')}")

    sla = spec_to_dict(LoadSpec(mode=Mode.OPEN, rate=50.0, model=MODEL, seed=1, classes=(TrafficClass(sla_ms=30.0),)))
    held = run_ab(lab, ABPlan(MODEL, _arms(lab, 0, 50000), sla, trials=4, trial_s=1.0, warmup_s=0.5))
    diffs = {d.key: d for cls, d in held.differences("B") if cls == "all"}
    good = diffs.get("goodput_rps")
    p99_b = [v for v in held.values("B", "p99_ms") if v is not None]
    said(claims, "a 50 ms delay at 50 req/s loses goodput within a 30 ms SLA (over 30 % lower, p99 over 45 ms)",
         held.status == "done" and good is not None and good.clear and (good.relative or 0) < -0.3
         and p99_b and min(p99_b) > 45,
         f"{held.status}; B's goodput {_interval(good)} of A's; B's p99 per trial {[round(v, 1) for v in p99_b]} ms")


def _values(result, arm: str) -> list:
    return [round(v, 1) if v is not None else None for v in result.values(arm, "p99_ms")]


def _interval(d) -> str:
    """Return a difference as '-44 % (CI -50 to -40 %)'."""
    if d is None or d.relative is None:
        return "not measured"
    low, high = d.relative_interval
    return f"{d.relative:+.0%} (CI {low:+.0%} to {high:+.0%})"


# --- the sweep's operating point against the cost model ------------------------------------------------------------
def sweep(lab: LabPort, claims: list[dict]) -> None:
    from app.experiments.sweep.space import RATE, Choice, SearchSpace  # noqa: PLC0415
    from app.experiments.sweep.sweeper import SweepOptions, run_sweep  # noqa: PLC0415

    p = {k: float(v) for k, v in parameters_of(parse_config(lab.served_text(MODEL))).items() if k != "model_kind"}
    capacity = 1e6 / (p["launch_overhead_us"] + 2 * p["copy_us_per_kib"] + p["compute_us_batch1"])  # 1 KiB in, out
    low, high = round(0.4 * capacity), round(1.8 * capacity)
    space = SearchSpace(model=MODEL, instances=(), delays_us=(), max_batch_sizes=(1, 32), include_default=False,
                        load_kind=RATE, loads=(low, high), p99_budget_ms=150.0)
    result = run_sweep(lab, space, label="bench: cost model", options=SweepOptions(max_windows=8))
    by_key = {q.key: q for q in result.points}
    summary = {k: (round(q.throughput or 0), round(q.p99 or 0, 1)) for k, q in by_key.items()}
    best, overloaded = result.best, by_key.get(f"b1@{high}")
    said(claims, "the sweep's operating point is the one the cost model implies",
         result.status == "done" and best is not None
         and (best.choice, best.load) == (Choice(max_batch_size=32, start=True), high)
         and overloaded is not None and overloaded.p99 > space.p99_budget_ms
         and overloaded.throughput < 1.15 * capacity and best.throughput > 0.9 * high,
         f"unbatched capacity {capacity:,.0f} req/s; points (req/s, p99 ms) {summary}; operating point "
         f"{best.key if best else None}")


# --- a trace-judged sweep through a crowd ----------------------------------------------------------------------------
def trace_sweep(lab: LabPort, claims: list[dict], folder: Path) -> None:
    from app.experiments.trace.play import TraceLoad  # noqa: PLC0415
    from app.experiments.trace.trace_sweep import TraceSweepPlan, run_trace_sweep  # noqa: PLC0415

    rates = [100] * 3 + [550] * 3 + [100] * 3  # one-minute steps, played at compress 60: 9 s
    trace = folder / "crowd.csv"
    trace.write_text("t,rate\n" + "".join(f"{i * 60},{r}\n" for i, r in enumerate(rates)))
    _serve(lab, {"max_batch_size": 4, "preferred_batch_size": ()}, "bench: batch 4")
    plan = TraceSweepPlan(MODEL, TraceLoad(str(trace), compress=60), sla_ms=100, instances=(1, 3), tolerance=0.25)
    result = run_trace_sweep(lab, plan, label="bench: crowd")
    scores = {r.choice.instances: r.score for r in result.runs}
    one, three = scores.get(1), scores.get(3)
    said(claims, "three instances hold a crowd one cannot (trace-judged sweep picks 3)",
         result.status == "done" and one is not None and three is not None and three.seconds_over <= 1
         and one.seconds_over >= 3 and one.sent == three.sent and result.pick is not None
         and result.pick.choice.instances == 3,
         "; ".join(f"{n} instance(s): {s.seconds_over} of {s.seconds} s over, goodput {s.goodput_rps:,.0f}/s, "
                   f"sent {s.sent}" for n, s in sorted(scores.items()))
         + f"; {result.verdict.reason if result.verdict else 'no verdict'}")


# --- the diagnosis on live traffic -----------------------------------------------------------------------------------
def diagnosis(lab: LabPort, claims: list[dict]) -> None:
    from app.diagnosis.diagnose import window_from  # noqa: PLC0415
    from app.diagnosis.patterns import diagnose, where_time_goes  # noqa: PLC0415
    from app.traffic.form import TrafficForm, build_spec  # noqa: PLC0415

    settings = _serve(lab, {"max_queue_delay_microseconds": 0}, "bench: no delay")
    lab.start_traffic(build_spec(TrafficForm(model=MODEL, mode="open", rate=20, arrival="poisson")))
    try:
        time.sleep(11.0)  # a 2 s warm-up, then 8 whole seconds of traffic on the new config
        now = time.time()
        window = window_from(lab.measure(MODEL, now - 8, now, include_held=False), settings)
    finally:
        lab.stop_traffic()
    found = [f.pattern for f in diagnose(window)]
    said(claims, "no delay under a light load: the diagnosis names batch stuck at 1", found == ["stuck"],
         f"findings {found}; average batch {window.avg_batch or 0:.2f}, p99 {window.p99_ms or 0:.1f} ms; "
         f"{where_time_goes(window)}")


def _serve(lab: LabPort, knobs: dict, what: str):
    """Serve gpu_sim's current config with knobs moved; return its settings."""
    current = lab.served_config(MODEL)
    settings = apply_knobs(settings_of(current), knobs)
    lab.apply(MODEL, set_settings(current, settings), what, confirm_contract=True)
    return settings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.study_claims", description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=PARTS, help="these parts (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="run the live parts this many times (default 1)")
    ap.add_argument("--json", type=Path, help="write every claim's figures here")
    args = ap.parse_args(argv)
    chosen = args.only or list(PARTS)
    claims: list[dict] = []
    if "ab-false-calls" in chosen:
        ab_false_calls(claims)
    if LIVE & set(chosen):
        import tempfile  # noqa: PLC0415

        from app.cli.headless import headless_lab  # noqa: PLC0415

        with tempfile.TemporaryDirectory(prefix="tbl-bench-claims-") as tmp, \
                headless_lab(None, MODEL, lab_models=True) as (lab, where):
            print(f"on {where}", flush=True)
            start = lab.served_text(MODEL)
            for _ in range(args.repeat):
                for part in (p for p in PARTS if p in LIVE and p in chosen):
                    print(f"--- {part}", flush=True)
                    if part == "ab-live":
                        ab_live(lab, claims)
                    elif part == "sweep":
                        sweep(lab, claims)
                    elif part == "trace-sweep":
                        trace_sweep(lab, claims, Path(tmp))
                    else:
                        diagnosis(lab, claims)
                    if lab.served_text(MODEL) != start:
                        lab.apply_text(MODEL, start, "bench: back to the starting config", confirm_contract=True)
    held = sum(c["held"] for c in claims)
    print(f"\n{held} of {len(claims)} claims held")
    if args.json is not None:
        args.json.write_text(json.dumps(claims, indent=1))
    return 0 if held == len(claims) else 1


if __name__ == "__main__":
    sys.exit(main())
