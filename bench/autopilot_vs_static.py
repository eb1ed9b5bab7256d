"""The autopilot against the best static config: python -m bench.autopilot_vs_static [--seconds 150] [--json OUT].

For each shipped trace (flash_crowd, diurnal), compressed to --seconds of playing, on gpu_sim on an embedded server
(a temporary copy of model_repository/), in one run:

1. **Trace-judged static**: the trace played once per instance count, 1 upward, each scored by the lab's one trace
   rule (app.experiments.trace.judge: goodput, worst-minute p99, seconds over the SLA, instance-seconds); the best
   static config is the lowest count that holds the SLA through the trace (seconds over ≤ 1 % of the played span) —
   so the counting stops at the first that holds: by the rule no higher count can beat it.
2. **Steady-load choice**: what a steady-load tuner picks — the lowest count whose p99 holds the SLA under a steady
   Poisson load at the trace's mean rate (STEADY_S measured after a warm-up) — and that config's score on the trace.
3. **Autopilot, reactive**: the trace played once more from 1 instance with the autopilot on (bounds
   1..--max-instances, the SLA, instance count only), measured and scored the same way, second by second with the
   instances served.
4. **Autopilot with a forecast**: the same, with a forecast of the traffic — *another day* of the same trace (the
   shipped generator's shape with other noise, make_shipped_traces(seed + FORECAST_SEED)), not the arrivals it
   plays — and the rate one instance carries within the SLA, measured before by a short probe (a sweep's
   operating point for one instance: steady rates up to the highest whose p99 stays under ACT_SHARE of the SLA),
   as a user gets it from a sweep.

Printed per trace: goodput, seconds over the SLA, worst-minute p99, instance-seconds of each, and each autopilot's
ratios to the best static config, against the issue's targets (seconds over ≤ 0.5×, instance-seconds ≤ 1.0×,
goodput ≥ 0.98×); the exit code is the forecast arm's. Every arm plays the same arrivals (one seed).
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from app.lab.ports import LabPort
from app.autopilot.pilot import Bounds
from app.autopilot.forecast import Forecast
from app.autopilot.rules import ACT_SHARE
from app.autopilot.steered import play_steered
from app.config.edits import set_settings
from app.config.read import settings_of
from app.experiments.driving import StudyDriver
from app.timeline.meter import merged
from app.experiments.trace.judge import TraceScore, judge
from app.experiments.trace.play import TraceLoad, play, score_of
from app.cli.headless import headless_lab
from app.config.knobs import apply_knobs
from loadgen.rate_trace.trace_load import played_s
from loadgen.rate_trace.shipped import make_shipped_traces
from loadgen.rate_trace.source import trace_of
from loadgen.spec import ArrivalSpec, LoadSpec, Mode, TrafficClass
from loadgen.stats import ALL, slas_of

MODEL = "gpu_sim"
TRACES = ("flash_crowd", "diurnal")
STEADY_S, STEADY_WARMUP_S = 15.0, 3.0
PROBE_S, PROBE_WARMUP_S = 5.0, 2.0
PROBE_SHARES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # of the overrun rate: the steady rates the probe tries
FORECAST_SEED = 100  # the forecast is the shipped shape drawn with seed 28 + this: another day, other noise
TARGETS = {"seconds_over": 0.5, "instance_seconds": 1.0, "goodput": 0.98}


def serve(lab: LabPort, instances: int, delay_us: int) -> None:
    """Serve gpu_sim with this many instances and max_queue_delay (a no-op when it already does)."""
    current = lab.served_config(MODEL)
    wanted = apply_knobs(settings_of(current), {"instance_count": instances, "max_queue_delay_microseconds": delay_us})
    if wanted != settings_of(current):
        lab.apply(MODEL, set_settings(current, wanted), f"bench: {instances} instance(s), delay {delay_us} µs")


def play_static(lab: LabPort, load: TraceLoad, sla_ms: float, seed: int, instances: int) -> TraceScore:
    """Play the trace once on a static count; return its score."""
    spec = load.spec(MODEL, sla_ms, seed)
    with lab.meter(MODEL, slas_of(spec)) as meter:
        windows = play(StudyDriver(lab, MODEL, 0, threading.Event()), meter, spec, f"static {instances}")
    return score_of(windows, spec, sla_ms, instances)


def steady(lab: LabPort, rate: float, sla_ms: float, seed: int, warmup_s: float = STEADY_WARMUP_S,
           seconds: float = STEADY_S) -> dict:
    """Return the clients' figures under a steady Poisson load at rate, measured seconds after a warm-up."""
    spec = LoadSpec(mode=Mode.OPEN, rate=rate, model=MODEL, arrival=ArrivalSpec(), duration_s=warmup_s + seconds + 10,
                    classes=(TrafficClass(sla_ms=sla_ms),), seed=seed)
    with lab.meter(MODEL, slas_of(spec)) as meter:
        driver = StudyDriver(lab, MODEL, 0, threading.Event())
        driver.wait_idle(meter)
        windows = driver.run_fixed(meter, spec, warmup_s, seconds, "steady")
    return merged(windows).figures()["client"].get(ALL, {})


def steady_p99(lab: LabPort, rate: float, sla_ms: float, seed: int) -> float | None:
    """Return the p99 (ms) under a steady Poisson load at rate, measured STEADY_S after a warm-up."""
    return steady(lab, rate, sla_ms, seed).get("p99_ms")


def probe_instance_rps(lab: LabPort, peak: float, sla_ms: float, seed: int, delay_us: int) -> tuple[float, list]:
    """Return what one instance carries within the SLA — a sweep's operating point, found the short way: what it
    serves overrun at the trace's peak (the clients' answered rate), then steady rates at PROBE_SHARES of that,
    upward, each PROBE_S after a warm-up, until p99 passes ACT_SHARE of the SLA (where the autopilot acts: a rate
    at the SLA's edge leaves no room for a reload); the highest that held (and every rate tried)."""
    serve(lab, 1, delay_us)
    saturated = float(steady(lab, peak, sla_ms, seed, PROBE_WARMUP_S, PROBE_S).get("throughput_rps") or 0.0)
    tried, held = [("overrun", peak, saturated)], 0.0
    for share in PROBE_SHARES:
        rate = saturated * share
        p99 = steady(lab, rate, sla_ms, seed, PROBE_WARMUP_S, PROBE_S).get("p99_ms")
        tried.append((f"{share:.0%}", rate, p99))
        if p99 is None or p99 > ACT_SHARE * sla_ms:
            break
        held = rate
    return held or saturated * PROBE_SHARES[0], tried


def one_trace(lab: LabPort, name: str, seconds: float, scale: float, sla_ms: float, most: int, delay_us: int,
              seed: int, dwell_s: float, reactive: bool = True) -> dict:
    """Run the three arms on one trace; return their scores and the autopilot's ratios."""
    trace = trace_of(ArrivalSpec(kind="rate_trace", rate_trace=name))
    load = TraceLoad(name, compress=trace.duration_s / seconds, scale=scale)
    played = played_s(load.spec(MODEL, sla_ms, seed).arrival)
    print(f"\n== {name}: {load.describe()}, {played:.0f} s played, mean {trace.mean * scale:.0f} req/s, peak "
          f"{trace.peak * scale:.0f} req/s, SLA p99 {sla_ms:g} ms", flush=True)
    static: dict[int, TraceScore] = {}
    for n in range(1, most + 1):
        serve(lab, n, delay_us)
        static[n] = play_static(lab, load, sla_ms, seed, n)
        print(f"  static {n}: {_row(static[n])}", flush=True)
        if static[n].holds():
            break
    verdict = judge({str(n): s for n, s in static.items()})
    best = int(verdict.pick)
    steady_n = None
    for n in range(1, most + 1):
        serve(lab, n, delay_us)
        p99 = steady_p99(lab, trace.mean * scale, sla_ms, seed)
        print(f"  steady {trace.mean * scale:.0f} req/s on {n}: p99 {p99:.1f} ms" if p99 is not None else
              f"  steady on {n}: no p99", flush=True)
        if p99 is not None and p99 <= sla_ms:
            steady_n = n
            break
    steady_n = steady_n or most
    if steady_n not in static:
        serve(lab, steady_n, delay_us)
        static[steady_n] = play_static(lab, load, sla_ms, seed, steady_n)
    bounds = Bounds(sla_ms, 1, most, (), dwell_s)
    arms: dict[str, dict] = {}
    if reactive:
        serve(lab, 1, delay_us)
        arms["reactive"] = _autopilot_arm(lab, "autopilot", bounds, load, sla_ms, seed, None, static[best])
    per, tried = probe_instance_rps(lab, trace.peak * scale, sla_ms, seed, delay_us)
    steps = "; ".join(f"{what} {rate:.0f} req/s: " + (f"served {v:.0f}" if what == "overrun" else
                                                       "no p99" if v is None else f"p99 {v:.1f} ms")
                      for what, rate, v in tried)
    print(f"  probe (one instance): {steps} → carries {per:.0f} req/s within the SLA", flush=True)
    day = make_shipped_traces(28 + FORECAST_SEED)[name]
    forecast = Forecast.of_trace(day, load.compress, scale, instance_rps=per or None,
                                 source=f"another day of {name}")
    serve(lab, 1, delay_us)
    arms["forecast"] = _autopilot_arm(lab, "autopilot + forecast", bounds, load, sla_ms, seed, forecast,
                                      static[best])
    return {"trace": name, "load": load.to_dict(), "played_s": played, "best_static": best,
            "verdict": verdict.to_dict(), "steady_choice": steady_n, "instance_rps": per, "probe": tried,
            "static": {str(n): s.to_dict() for n, s in static.items()}, "arms": arms,
            # the forecast arm's figures, under the keys of the first version's --json
            "autopilot": arms["forecast"]["score"], "ratios": arms["forecast"]["ratios"],
            "met": arms["forecast"]["met"]}


def _autopilot_arm(lab: LabPort, what: str, bounds: Bounds, load: TraceLoad, sla_ms: float, seed: int,
                   forecast: Forecast | None, best: TraceScore) -> dict:
    """Play the trace from 1 instance under the autopilot (with the forecast, or reactive); return its score, its
    changes and its ratios to the best static config."""
    run = play_steered(lab, MODEL, bounds, load, sla_ms, seed, window_s=3.0, period_s=1.0, forecast=forecast)
    auto = run.score
    print(f"  {what}: {_row(auto)}; {sum(d.changes for d in run.autopilot.changes)} changes"
          + (f"; stopped: {run.autopilot.stopped}" if run.autopilot.stopped else ""), flush=True)
    for d in run.autopilot.changes:
        print(f"    {time.strftime('%H:%M:%S', time.localtime(d.t))} {d.reason}", flush=True)
    ratios = {"seconds_over": _ratio(auto.seconds_over, best.seconds_over),
              "instance_seconds": _ratio(auto.instance_seconds, best.instance_seconds),
              "goodput": _ratio(auto.goodput_rps, best.goodput_rps)}
    met = {"seconds_over": auto.seconds_over <= TARGETS["seconds_over"] * best.seconds_over,
           "instance_seconds": ratios["instance_seconds"] <= TARGETS["instance_seconds"],
           "goodput": ratios["goodput"] >= TARGETS["goodput"]}
    return {"score": auto.to_dict(), "changes": [d.to_dict() for d in run.autopilot.changes], "ratios": ratios,
            "met": met, "counts": list(run.counts)}


def _row(s: TraceScore) -> str:
    worst = "—" if s.worst_minute_p99_ms is None else f"{s.worst_minute_p99_ms:.0f} ms"
    return (f"goodput {s.goodput_rps:.1f}/s, {s.seconds_over} s over of {s.seconds}, worst-minute p99 {worst}, "
            f"{s.instance_seconds:.0f} instance-s{' (holds)' if s.holds() else ''}")


def _ratio(a: float, b: float) -> float | None:
    return None if not b else a / b


ARM_NAMES = {"reactive": "autopilot (from 1)", "forecast": "autopilot + forecast"}


def report(results: list[dict]) -> str:
    """Return the comparison table."""
    lines = ["", f"{'trace':12} {'arm':22} {'goodput/s':>9} {'s over':>6} {'worst-min p99':>13} {'inst-s':>7}"]
    for r in results:
        arms = [(f"best static ({r['best_static']})", r["static"][str(r["best_static"])]),
                (f"steady choice ({r['steady_choice']})", r["static"][str(r["steady_choice"])])]
        arms += [(ARM_NAMES[k], a["score"]) for k, a in r["arms"].items()]
        for arm, s in arms:
            worst = s["worst_minute_p99_ms"]
            lines.append(f"{r['trace']:12} {arm:22} {s['goodput_rps']:9.1f} {s['seconds_over']:6d} "
                         f"{'—' if worst is None else f'{worst:.0f} ms':>13} {s['instance_seconds']:7.0f}")
        for k, a in r["arms"].items():
            words = ", ".join(f"{m} {'—' if v is None else f'{v:.2f}×'} ({'met' if a['met'][m] else 'NOT met'})"
                              for m, v in a["ratios"].items())
            lines.append(f"{'':12} {ARM_NAMES[k]} / best static: {words}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.autopilot_vs_static", description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=",".join(TRACES), help="comma-separated shipped traces")
    ap.add_argument("--seconds", type=float, default=150.0, help="played seconds per trace (sets compress)")
    ap.add_argument("--scale", type=float, default=1.0, help="rate multiplier")
    ap.add_argument("--sla-ms", type=float, default=50.0)
    ap.add_argument("--max-instances", type=int, default=3)
    ap.add_argument("--delay-us", type=int, default=500, help="max_queue_delay of every arm")
    ap.add_argument("--dwell-s", type=float, default=4.0, help="the autopilot's dwell")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-reactive", action="store_true", help="skip the reactive autopilot arm")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args(argv)
    started = time.time()
    with headless_lab(None, MODEL) as (lab, where):
        print(f"bench.autopilot_vs_static on {where}", flush=True)
        results = [one_trace(lab, name, args.seconds, args.scale, args.sla_ms, args.max_instances, args.delay_us,
                             args.seed, args.dwell_s, not args.no_reactive)
                   for name in args.traces.split(",") if name]
    print(report(results))
    print(f"\nwall {time.time() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)
    return 0 if all(all(r["met"].values()) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
