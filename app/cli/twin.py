"""The twin from the command line: python -m app.experiments predict --model M [--instances 1,2] [--delay-us 0,500]
[--rate 100,200 | --concurrency 8] ... — calibrate on a short probe of the live server, then print, as JSON, what
each combination of knobs and loads would do: throughput, p50/p99, batch sizes and rejections, each with an
interval, and what the calibration lacks. Nothing is applied; the probe sends traffic only (about 3 s a level).
Exits 0 with the predictions, 2 when nothing could be predicted (the message on stderr): an ensemble (its steps
have the queues), a scheduler the twin does not model (sequence batching), a knob the model cannot take, or a
probe that saw too few executions."""
from __future__ import annotations

import dataclasses
import itertools
import json
import sys

LEVEL_S = 3.0


def add_arguments(sub, common, numbers) -> None:
    """Add the predict command and its arguments to the studies' command line."""
    p = sub.add_parser("predict", parents=[common], help="what knobs would do, from the twin (JSON; nothing applied)",
                       description="Calibrate the twin on a short probe of the model (a few seconds of traffic, no "
                                   "config changed), then predict each combination of knobs and loads: throughput, "
                                   "p50/p99 and batch sizes with intervals, the saturation of each knob set, and "
                                   "what the prediction lacks. JSON on stdout (and --json), a line per prediction "
                                   "on stderr.")
    p.add_argument("--instances", type=numbers(int), default=(), help="instance counts, e.g. 1,2,4 (default: served)")
    p.add_argument("--delay-us", type=numbers(int), default=(), help="max_queue_delay values (µs), e.g. 0,500")
    p.add_argument("--max-batch-size", type=numbers(int), default=(), help="max_batch_size values")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=numbers(float), help="open-loop loads (req/s), e.g. 100,200")
    load.add_argument("--concurrency", type=numbers(int), help="closed-loop loads (requests in flight), e.g. 8")
    p.add_argument("--arrival", choices=("poisson", "bursty"), default="poisson", help="open-loop arrivals")
    p.add_argument("--duration-s", type=float, default=30.0, help="simulated seconds per prediction (default 30)")
    p.add_argument("--replications", type=int, default=5, help="simulated runs per prediction (default 5)")
    p.add_argument("--probe-s", type=float, default=LEVEL_S, help="seconds each probe level is measured, after 0.3 s of its traffic (default 3)")


def knobs_refused(args, served) -> str:
    """Return why the twin cannot answer for this model or these knobs ('' when it can): an ensemble has no queue of
    its own, and a knob the model cannot take (the sweep's offer, app.experiments.sweep.knob_offer) is refused
    rather than predicted as if it were not given."""
    from app.experiments.sweep.knob_offer import knob_offer  # noqa: PLC0415
    from app.twin.batcher import unmodelled  # noqa: PLC0415

    why = unmodelled(args.model, served)  # before a probe that could only end the same way
    if why:
        return why
    offer = knob_offer(served)
    if args.instances and not offer.instances:
        return f"--instances: {offer.why}"
    if args.max_batch_size and not offer.batch_sizes:
        return f"--max-batch-size: {offer.why}"
    if args.delay_us and not offer.batching(args.max_batch_size):
        return f"--delay-us: {offer.why}"
    return ""


def refused_before_start(args) -> str:
    """Return what is wrong with the arguments themselves ('' when nothing): said before any server starts or probe
    runs, where it was said after a probe of seconds, or not at all (--instances 0 was predicted as one instance)."""
    if args.report is not None or args.label:
        return "--report and --label are for studies; predict stores nothing: write its JSON with --json"
    checks = (("--instances", args.instances, 1), ("--delay-us", args.delay_us, 0),
              ("--max-batch-size", args.max_batch_size, 0), ("--concurrency", args.concurrency or (), 1))
    for flag, values, least in checks:
        bad = [v for v in values if v < least]
        if bad:
            return f"{flag}: {bad[0]:g} is under {least}; use {least} or more"
    bad = [r for r in args.rate or () if not r > 0]
    if bad:
        return f"--rate: {bad[0]:g} req/s; a rate must be positive"
    if args.replications < 1:
        return f"--replications: {args.replications}; use 1 or more"
    if not args.duration_s > 0 or not args.probe_s > 0:
        return "--duration-s and --probe-s must be positive"
    return ""


def _rounded(value):
    """Return value with every float to 4 significant digits (a figure's noise, not 15 digits of it)."""
    if isinstance(value, float):
        return float(f"{value:.4g}") if value == value else None
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def _entry(knobs: dict, load, level, rate: bool, prediction, limit) -> dict:
    """Return one prediction as the command's JSON gives it: the load it is for, the figures with their intervals,
    the batch sizes as {size: share of executions}, and the knobs' saturation beside it."""
    figures = dataclasses.asdict(prediction)
    figures["histogram"] = {str(size): share for size, share in prediction.histogram}
    what = ({"rate": level, "arrival": load.kind.value} if rate else {"concurrency": level})
    entry = {"knobs": knobs or "served", "load": {**what, "simulated_s": load.duration_s},
             "prediction": figures, "saturation_rps": dataclasses.asdict(limit)}
    if rate:
        entry["overloaded"] = prediction.overloaded
    return _rounded(entry)


def _line(entry: dict) -> str:
    """Return one prediction in a line for a person (stderr; stdout keeps the JSON)."""
    p = entry["prediction"]

    def span(name: str, digits: int) -> str:
        f = p[name]
        return f"{f['value']:.{digits}f} [{f['low']:.{digits}f}–{f['high']:.{digits}f}]"
    knobs = ", ".join(f"{k}={v}" for k, v in entry["knobs"].items()) if isinstance(entry["knobs"], dict) else "served"
    load = entry["load"]
    where = f"{load['rate']:g} req/s {load['arrival']}" if "rate" in load else f"{load['concurrency']} in flight"
    flag = "  OVERLOADED" if entry.get("overloaded") else ""
    return (f"{knobs} @ {where}: {span('throughput_rps', 0)} req/s, p50 {span('p50_ms', 1)} ms, p99 "
            f"{span('p99_ms', 1)} ms, batch {p['mean_batch']['value']:.1f}; saturates at "
            f"{entry['saturation_rps']['value']:,.0f} req/s; {p['confidence'].split(':')[0]} confidence{flag}")


def run(args) -> int:
    """Probe the model on a headless lab, then predict every combination; print the JSON (and write --json), and a
    line per prediction for a person on stderr."""
    from app.cli.headless import cancel_on_signals, headless_lab  # noqa: PLC0415 - a server for `predict` only
    from app.config.knobs import apply_knobs  # noqa: PLC0415
    from app.config.read import settings_of  # noqa: PLC0415
    from app.experiments.probe import probe  # noqa: PLC0415
    from app.twin.load import Load  # noqa: PLC0415
    from app.twin.predict import predict, saturation  # noqa: PLC0415

    wrong = refused_before_start(args)
    if wrong:
        print(f"error: {wrong}", file=sys.stderr)
        return 2
    with headless_lab(args.model_repository, args.model) as (lab, where), cancel_on_signals() as cancel:
        refused = knobs_refused(args, lab.served_config(args.model))
        if refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2
        print(f"probing {args.model} on {where} ...", file=sys.stderr, flush=True)
        calibration = probe(lab, args.model, level_s=args.probe_s, cancel=cancel)
        if calibration is None:
            print(f"error: the probe saw too few executions of {args.model} to calibrate the twin", file=sys.stderr)
            return 2
        served = settings_of(lab.served_config(args.model))
    out = []
    grid = itertools.product(args.instances or (None,), args.delay_us or (None,), args.max_batch_size or (None,))
    for instances, delay, max_batch in grid:
        knobs = {k: v for k, v in (("instance_count", instances), ("max_queue_delay_microseconds", delay),
                                   ("max_batch_size", max_batch)) if v is not None}
        settings = apply_knobs(served, knobs)
        limit = saturation(calibration, settings)  # the knobs' own, beside each of their loads
        for level in args.rate or args.concurrency:
            if args.rate:
                make = Load.bursty if args.arrival == "bursty" else Load.poisson
                load = make(float(level), args.duration_s, warmup_s=min(3.0, args.duration_s / 4))
            else:
                load = Load.closed(int(level), args.duration_s, warmup_s=min(3.0, args.duration_s / 4))
            prediction = predict(calibration, settings, load, seed=args.seed, replications=args.replications)
            out.append(_entry(knobs, load, level, bool(args.rate), prediction, limit))
            print(_line(out[-1]), file=sys.stderr)
    result = {"model": args.model, "where": where, "calibration": _rounded({
        "instance_counts": list(calibration.instance_counts), "batch_sizes_measured": list(calibration.curve.sizes),
        "client_overhead_us": calibration.client_overhead_us}), "predictions": out}
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if args.json is not None:
        args.json.write_text(text)
    return 0
