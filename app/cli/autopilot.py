"""The autopilot from the command line: python -m app.experiments autopilot --model M --sla-ms 50 ...

It drives its own traffic — a shipped or recorded rate trace (--trace), or a steady Poisson rate (--rate) — because it
judges the p99 of the lab's own requests, and steers the model within the bounds until the traffic ends (or
--duration-s, or Ctrl-C), printing every change with its reason. On the embedded server (a temporary copy of the
repository) nothing of the folder changes; on TRITON_URL's server the config it left keeps serving. With
--forecast (a trace it expects: the played one, or another day's) it adds instances before the rate arrives.
Exits 0 when it ran to the end, 1 when it stopped itself (why on stderr), 2 on bad arguments or a failure.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.autopilot.pilot import Bounds
from app.autopilot.forecast import LEAD_S, Forecast
from app.autopilot.job import PERIOD_S, WINDOW_S, AutopilotJob, bounds_dict
from app.cli.headless import cancel_on_signals, headless_lab
from loadgen.spec import LoadSpec, Mode, TrafficClass

RAN, STOPPED_ITSELF, FAILED = 0, 1, 2


def add_arguments(sub, common: argparse.ArgumentParser, numbers) -> None:
    """Add the autopilot command to the studies' command line (common: --model, --model-repository, --json ...)."""
    cmd = sub.add_parser("autopilot", parents=[common], help="hold p99 under an SLA by changing instances and the "
                         "batching delay live, under a trace or a steady rate")
    cmd.add_argument("--sla-ms", type=float, required=True, help="the p99 to hold (ms)")
    cmd.add_argument("--min-instances", type=int, default=1, help="fewest instances (default 1)")
    cmd.add_argument("--max-instances", type=int, default=4, help="most instances (default 4)")
    cmd.add_argument("--delays-us", type=numbers(int), default=(), help="max_queue_delay values it may choose, e.g. "
                     "0,100,500 (default: leave the delay alone)")
    cmd.add_argument("--dwell-s", type=float, default=10.0, help="at least this long between changes (default 10)")
    cmd.add_argument("--failure-stop", type=float, default=0.05, help="stop above this failure share (default 0.05)")
    cmd.add_argument("--window-s", type=float, default=WINDOW_S, help=f"each decision's window (default {WINDOW_S:g})")
    cmd.add_argument("--period-s", type=float, default=PERIOD_S, help=f"a decision every (default {PERIOD_S:g})")
    cmd.add_argument("--advisory", action="store_true", help="say what it would change and why, apply nothing")
    cmd.add_argument("--no-twin", action="store_true", help="decide by the reactive rules alone (the twin does not "
                     "size adds nor hold give-backs)")
    traffic = cmd.add_mutually_exclusive_group(required=True)
    traffic.add_argument("--trace", help="a shipped trace (diurnal, flash_crowd) or a rate file to play once")
    traffic.add_argument("--rate", type=float, help="a steady Poisson rate (req/s) instead of a trace")
    cmd.add_argument("--compress", type=float, default=1.0, help="trace: recorded seconds per played second")
    cmd.add_argument("--scale", type=float, default=1.0, help="trace: rate multiplier")
    cmd.add_argument("--duration-s", type=float, help="stop after this long (default: the trace's played span; "
                     "with --rate, 300)")
    cmd.add_argument("--forecast", help="with --trace: a rate trace to add instances ahead of — 'same' (the played "
                     "trace), a shipped trace or a rate file (e.g. yesterday's), played with the same --compress and "
                     "--scale from the playback's start (default: none, react to the windows alone)")
    cmd.add_argument("--lead-s", type=float, default=LEAD_S, help=f"forecast: how far ahead to size (default "
                     f"{LEAD_S:g} s)")
    cmd.add_argument("--instance-rps", type=float, help="forecast: the requests/s one instance holds with p99 under "
                     "80 %% of the SLA (where the autopilot acts; e.g. a sweep's); default: the most one instance has "
                     "carried so far that way")


def traffic_for(args) -> LoadSpec:
    """Return the load the autopilot runs under (ValueError/TraceError with the fix for bad arguments)."""
    base = LoadSpec(mode=Mode.OPEN, model=args.model, rate=args.rate or 1.0, duration_s=args.duration_s or 300.0,
                    classes=(TrafficClass(sla_ms=args.sla_ms),), seed=args.seed)
    if args.trace is None:
        return base
    from loadgen.rate_trace.trace_load import trace_load  # noqa: PLC0415

    return trace_load(base, args.trace, args.compress, args.scale)


def forecast_for(args) -> Forecast | None:
    """Return the forecast asked for (None: none), or raise ValueError/TraceError with the fix."""
    if args.forecast is None:
        if args.instance_rps is not None:
            raise ValueError("--instance-rps sizes ahead of a forecast: give --forecast too")
        return None
    if args.trace is None:
        raise ValueError("--forecast needs --trace: the forecast is aligned to the trace's playback")
    from loadgen.rate_trace.source import trace_of  # noqa: PLC0415
    from loadgen.spec import ArrivalSpec  # noqa: PLC0415

    name = args.trace if args.forecast == "same" else args.forecast
    trace = trace_of(ArrivalSpec(kind="rate_trace", rate_trace=name))
    return Forecast.of_trace(trace, args.compress, args.scale, lead_s=args.lead_s, instance_rps=args.instance_rps,
                             source="the played trace" if args.forecast == "same" else name)


def run(args) -> int:
    """Run the autopilot as asked; print its changes (and, under a trace, the trace's score); return the exit code."""
    if args.report:
        raise ValueError("--report is for studies; the autopilot writes --json, and its study shows on the pages")
    bounds = Bounds(args.sla_ms, args.min_instances, args.max_instances, tuple(args.delays_us), args.dwell_s,
                    args.failure_stop)
    spec = traffic_for(args)  # checked before any server starts
    forecast = forecast_for(args)
    seconds = args.duration_s or spec.duration_s
    out: dict = {"model": args.model, "bounds": bounds_dict(bounds)}
    with headless_lab(args.model_repository, args.model) as (lab, where), cancel_on_signals() as cancel:
        print(f"autopilot on {args.model} ({where}): p99 ≤ {bounds.sla_p99_ms:g} ms, {bounds.min_instances}–"
              f"{bounds.max_instances} instances, delays {list(bounds.delays_us) or 'left alone'}, dwell "
              f"{bounds.dwell_s:g} s; traffic: {args.trace or f'{args.rate:g} req/s'} for {seconds:,.0f} s",
              flush=True)
        if args.trace is not None:
            from app.autopilot.steered import play_steered  # noqa: PLC0415
            from app.experiments.trace.play import TraceLoad  # noqa: PLC0415

            steered = play_steered(lab, args.model, bounds, TraceLoad(args.trace, args.compress, args.scale),
                                   args.sla_ms, args.seed, window_s=args.window_s, period_s=args.period_s,
                                   cancel=cancel, progress=_printer(), forecast=forecast)
            result, judged = steered.autopilot, steered.score
            print(f"on the trace: goodput {judged.goodput_rps:.1f}/s, {judged.seconds_over} of {judged.seconds} s "
                  f"over the SLA, worst-minute p99 {judged.worst_minute_p99_ms or 0:.1f} ms, "
                  f"{judged.instance_seconds:.0f} instance-seconds", flush=True)
            out["trace_score"] = judged.to_dict()
        else:
            job = AutopilotJob(lab, args.model, bounds, window_s=args.window_s, period_s=args.period_s,
                               duration_s=seconds, label=args.label, advisory=args.advisory, twin=not args.no_twin)
            lab.start_traffic(spec)
            try:
                result = job.run(_printer(), cancel)
            finally:
                lab.stop_traffic()
    changes = [d for d in result.changes if d.changes]
    print(f"{len(changes)} change(s) in {result.windows} windows; study {result.study_id}", flush=True)
    if args.json:
        out.update({"status": result.status, "stopped": result.stopped, "study_id": result.study_id,
                    "windows": result.windows, "changes": [d.to_dict() for d in result.changes]})
        Path(args.json).write_text(json.dumps(out, indent=2))
    if result.status == "failed":
        print(f"error: the autopilot failed: {result.stopped}", file=sys.stderr)
        return FAILED
    if result.stopped:
        print(f"the autopilot stopped itself: {result.stopped}", file=sys.stderr)
        return STOPPED_ITSELF
    return RAN


def _printer():
    """Return a progress callback printing each change (and the stop) once, as it happens."""
    printed = [0]

    def progress(p) -> None:
        for line in p.log[printed[0]:]:
            print(f"  {line}", flush=True)
        printed[0] = len(p.log)
    return progress
