"""An add of several instances in one reload, or one instance per reload: python -m bench.add_reload
[--rates 120,220,320] [--reps 4] [--gap-s 1.0] [--json OUT].

Why: the autopilot adds instances ahead of a forecast while one instance serves the traffic; Triton loads the new
instances in place, and loading them takes the CPU the serving one needs. On an embedded server (a temporary copy of
model_repository/), gpu_sim with one instance serves an open Poisson load at each rate; each repetition adds two
instances both ways, through the lab's safe apply — *direct* (1 → 3 in one reload) and *stepwise* (1 → 2, then
2 → 3 --gap-s after the first served) — and goes back to one instance between them, the two ways alternating.

Printed per rate and way, over the repetitions: the worst one-second p99 (whole seconds, as the autopilot's score
judges them) from a second before the add's start to --gap-s + 3 s after it — the same span both ways — its median
and highest, and the requests over 50 ms in it; the first add of each way (the first time the server creates those
instances) is left out, the ways alternate which goes first, and the three seconds before each add (after the
previous step down has settled) give the baseline.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

from app.lab.ports import LabPort
from app.cli.headless import headless_lab
from bench.autopilot_vs_static import MODEL, serve
from loadgen.spec import ArrivalSpec, LoadSpec, Mode, TrafficClass

DELAY_US = 500
SETTLE_S = 4.0  # after an add, before going back to one instance
SETTLE_BACK_S = 6.0  # after going back to one instance, before the next add (the baseline: its last 3 s but one)
WAYS = ("direct", "stepwise")


def one_rate(lab: LabPort, rate: float, reps: int, gap_s: float) -> dict:
    """Add two instances both ways reps (+1 warm-up) times under rate req/s; return each add's figures."""
    serve(lab, 1, DELAY_US)
    records: list = []
    spec = LoadSpec(mode=Mode.OPEN, rate=rate, model=MODEL, arrival=ArrivalSpec(), duration_s=3600,
                    classes=(TrafficClass(sla_ms=50.0),), seed=3)
    unsubscribe = lab.traffic_records(records.extend)
    lab.start_traffic(spec)
    events = []
    try:
        while lab.traffic().started_at is None:
            time.sleep(0.05)
        t0 = lab.traffic().started_at
        time.sleep(SETTLE_BACK_S)
        for rep in range(reps + 1):
            for way in (WAYS if rep % 2 == 0 else WAYS[::-1]):
                began = time.time() - t0
                if way == "direct":
                    serve(lab, 3, DELAY_US)
                else:
                    serve(lab, 2, DELAY_US)
                    time.sleep(gap_s)
                    serve(lab, 3, DELAY_US)
                events.append((rep, way, began, time.time() - t0))
                time.sleep(SETTLE_S)
                serve(lab, 1, DELAY_US)
                time.sleep(SETTLE_BACK_S)
    finally:
        lab.stop_traffic()
        unsubscribe()
    done = [(r.done_s, r.latency_s) for r in records]
    adds = []
    for rep, way, began, ended in events:
        adds.append({"rep": rep, "way": way, "began_s": began, "took_s": ended - began,
                     **_seconds(done, began - 1.0, began + gap_s + 3.0),
                     "baseline": _seconds(done, began - 4.0, began - 1.0)})
    return {"rate": rate, "adds": adds}


def _seconds(done: list[tuple[float, float]], t0: float, t1: float) -> dict:
    """Return the worst p99 (ms) of the whole seconds of the run that [t0, t1) covers (the requests that ended in
    each) and how many of their requests took over 50 ms."""
    first, last = math.floor(t0), math.ceil(t1)  # the seconds that hold any of [t0, t1)
    seconds: dict[int, list[float]] = {}
    for end, latency in done:
        if first <= end < last:
            seconds.setdefault(int(end), []).append(latency)
    full = [v for v in seconds.values() if len(v) >= 20]
    worst = max((float(np.percentile(v, 99)) * 1000 for v in full), default=None)
    return {"worst_second_p99_ms": worst, "over_50ms": sum(1 for v in seconds.values() for x in v if x > 0.05)}


def report(results: list[dict]) -> str:
    """Return the table: per rate and way, the worst second's p99 over the repetitions (the warm-up left out)."""
    lines = ["| req/s | way | adds | worst-second p99, median (ms) | highest (ms) | requests > 50 ms | "
             "baseline median (ms) |", "|---|---|---|---|---|---|---|"]
    for result in results:
        for way in WAYS:
            adds = [a for a in result["adds"] if a["way"] == way and a["rep"] > 0 and a["worst_second_p99_ms"]]
            if not adds:
                continue
            worst = [a["worst_second_p99_ms"] for a in adds]
            base = [a["baseline"]["worst_second_p99_ms"] for a in adds if a["baseline"]["worst_second_p99_ms"]]
            baseline = f"{statistics.median(base):.1f}" if base else "—"
            lines.append(f"| {result['rate']:g} | {way} | {len(adds)} | {statistics.median(worst):.1f} | "
                         f"{max(worst):.1f} | "
                         f"{sum(a['over_50ms'] for a in adds)} | {baseline} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.add_reload", description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="120,220,320", help="comma-separated req/s")
    ap.add_argument("--reps", type=int, default=4, help="adds each way per rate (after one warm-up each)")
    ap.add_argument("--gap-s", type=float, default=1.0, help="stepwise: the pause between the two reloads")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args(argv)
    started = time.time()
    with headless_lab(None, MODEL) as (lab, where):
        print(f"bench.add_reload on {where}", flush=True)
        results = [one_rate(lab, float(rate), args.reps, args.gap_s) for rate in args.rates.split(",") if rate]
    print(report(results))
    print(f"\nwall {time.time() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
