"""Command line: python -m loadgen run --url ... (--concurrency N | --rate R --arrival KIND) --duration S;
python -m loadgen worker (the dashboard's generator process, loadgen.worker)."""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path

from loadgen.limits import LIMITS
from loadgen.rate_trace.trace_load import trace_load, trace_of
from loadgen.report import format_summary, json_summary
from loadgen.run import LoadRun
from loadgen.inputs.shapes import ShapeSpec
from loadgen.sinks import JsonlSink
from loadgen.spec import (ArrivalKind, ArrivalSpec, InputSpec, LoadSpec, Mode, RetryKind, RetryPolicy,
                          TrafficClass)
from loadgen.specfile import build, load_spec
from loadgen.stats import stats_for


def parser() -> argparse.ArgumentParser:
    """Return the argument parser."""
    p = argparse.ArgumentParser(prog="python -m loadgen", description="Load generator for Triton Inference Server")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a load and print a summary", epilog=bounds_text())
    run.add_argument("--url", required=True, help="server HTTP address, e.g. http://127.0.0.1:8000")
    run.add_argument("--grpc-url", help="server gRPC host:port, for decoupled models (default: TRITON_GRPC_URL, or "
                     "the HTTP host's 8001 when HTTP is on 8000)")
    run.add_argument("--model", help="model of the classes that name none")
    load = run.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=int, help="closed loop: requests in flight")
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    run.add_argument("--arrival", choices=[k.value for k in ArrivalKind], help="open-loop arrival process")
    run.add_argument("-p", "--arrival-param", action="append", default=[], metavar="KEY=VALUE",
                     help="arrival parameter, e.g. on_s=0.5, trace=FILE, steps=10:1,10:3; rate_trace: "
                          "rate_trace=flash_crowd|diurnal|FILE, compress=60, scale=0.5, trace_class=NAME (the trace "
                          "plays once: --rate is its played mean, --duration cuts it short)")
    run.add_argument("--duration", type=float, help="seconds to run")
    run.add_argument("--max-requests", type=int, help="stop after this many requests")
    run.add_argument("--warmup", type=float, help="seconds left out of the summary")
    run.add_argument("--spec", type=Path, help="YAML LoadSpec with classes and sequences")
    run.add_argument("--timeout-ms", type=float, help="client timeout per request")
    run.add_argument("--priority", type=int, help="Triton priority level (1 is highest)")
    run.add_argument("--sla-ms", type=float, help="latency that counts as goodput")
    run.add_argument("--retry", choices=[k.value for k in RetryKind], help="retry policy")
    run.add_argument("--max-attempts", type=int, default=3, help="attempts in all when retrying")
    run.add_argument("--shape", action="append", default=[], metavar="[INPUT:]DIMS",
                     help="dims without batch: 16 or 8,4 for the inputs served with a -1, or INPUT:3,224,224 for one "
                          "input (repeatable)")
    run.add_argument("--send", action="append", default=[], metavar="INPUT", help="send this optional input too")
    run.add_argument("-b", "--batch", type=int, help="rows per request (batching models)")
    run.add_argument("--input-data", metavar="PATH",
                     help="real inputs: a perf_analyzer --input-data JSON file or a folder of INPUT.npy files")
    run.add_argument("--string-len", metavar="LOW[:HIGH]", help="lengths of random BYTES (string) elements")
    run.add_argument("--lengths", help="variable length LOW:HIGH drawn uniformly for the -1 dim")
    run.add_argument("--pad-to", help="pad each length up to the smallest of these buckets, e.g. 64,128,256")
    run.add_argument("--spin-us", type=float, help="open loop: busy-wait this long before each send (sharper timing)")
    run.add_argument("--seed", type=int)
    run.add_argument("--json", type=Path, help="write the JSON summary here")
    run.add_argument("--records", type=Path, help="write every record here (JSON lines)")
    run.add_argument("--quiet", action="store_true", help="print nothing")
    sub.add_parser("worker", help="serve runs over stdin/stdout, JSON lines (the dashboard starts it)")
    return p


def bounds_text() -> str:
    """Return the main load bounds of the one table (loadgen.limits), as the help says them."""
    keys = ("concurrency", "rate", "duration_s", "max_requests")
    parts = [f"{LIMITS[k].what} {LIMITS[k].range_text()}" for k in keys]
    return ("Bounds (loadgen.limits; a value outside, nan or infinity is refused before anything is sent): "
            + "; ".join(parts) + ".")


def spec_from_args(args: argparse.Namespace) -> LoadSpec:
    """Return the LoadSpec of the command line (on top of --spec when given)."""
    spec = load_spec(args.spec) if args.spec else LoadSpec(duration_s=10.0)
    top: dict = {}
    if args.model:
        top["model"] = args.model
    if args.concurrency is not None:
        top.update(mode=Mode.CLOSED, concurrency=args.concurrency)
    if args.rate is not None:
        top.update(mode=Mode.OPEN, rate=args.rate)
    scale = None
    if args.arrival or args.arrival_param:
        params = dict(_pair(p) for p in args.arrival_param)
        if "steps" in params:
            params["steps"] = [s.split(":") for s in params["steps"].split(",")]
        if "scale" in params:  # not an ArrivalSpec field: a rate trace's rate multiplier (the played mean's factor)
            scale = build(float, params.pop("scale"), "--arrival-param scale")
        base = {**spec_to_kwargs(spec.arrival), **({"kind": args.arrival} if args.arrival else {}), **params}
        top["arrival"] = build(ArrivalSpec, base, "--arrival-param")
    for name, value in (("duration_s", args.duration), ("max_requests", args.max_requests), ("warmup_s", args.warmup),
                        ("seed", args.seed), ("spin_us", args.spin_us)):
        if value is not None:
            top[name] = value
    if not args.spec:
        top["classes"] = (_class_from_args(args),)
    spec = dataclasses.replace(spec, **top) if top else spec
    return _trace_run(spec, args, scale) if spec.arrival.kind is ArrivalKind.RATE_TRACE else spec


def _trace_run(spec: LoadSpec, args: argparse.Namespace, scale: float | None) -> LoadSpec:
    """Return a rate_trace spec as a run that plays its trace once: open loop, the played span unless --duration
    cuts it short, the rate from --rate (the played mean; else a --spec file's rate) or from scale (default 1: the
    trace as recorded)."""
    if scale is not None and args.rate is not None:
        raise ValueError("give --rate (the played mean rate) or -p scale= (the rate multiplier) for a rate trace, "
                         "not both")
    arrival = spec.arrival
    if scale is None:
        rate = args.rate if args.rate is not None else (spec.rate if args.spec else None)
        scale = rate / trace_of(arrival).mean if rate is not None else 1.0
    played = trace_load(spec, arrival.rate_trace, arrival.compress, scale, arrival.process, arrival.trace_class)
    bounds = {"duration_s": args.duration if args.duration is not None else played.duration_s,
              "max_requests": args.max_requests}
    return dataclasses.replace(played, **bounds)


def spec_to_kwargs(obj) -> dict:
    """Return a dataclass's fields as a dict (one level)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _class_from_args(args: argparse.Namespace) -> TrafficClass:
    fields: dict = {}
    if args.timeout_ms is not None:
        fields["timeout_ms"] = args.timeout_ms
    if args.priority is not None:
        fields["priority"] = args.priority
    if args.sla_ms is not None:
        fields["sla_ms"] = args.sla_ms
    if args.retry:
        fields["retry"] = RetryPolicy(args.retry, max_attempts=args.max_attempts)
    return TrafficClass(**fields, **_input_fields(args))


def _input_fields(args: argparse.Namespace) -> dict:
    """Return a class's shape, per-input settings, data and string lengths from the command line."""
    own = {name: dims for name, _, dims in (t.rpartition(":") for t in args.shape if ":" in t)}
    wide = [t for t in args.shape if ":" not in t]
    if len(wide) > 1:
        raise ValueError(f"--shape without an input name sizes the inputs with a -1: give it once, got {wide}")
    shape: dict = {"dims": _ints(wide[0], "--shape") if wide else None, "batch": args.batch or 1}
    if args.lengths:
        low, high = _ints(args.lengths, "--lengths", ":")
        buckets = _ints(args.pad_to, "--pad-to") if args.pad_to else ()
        shape.update(kind="uniform", low=low, high=high, buckets=buckets)
    fields: dict = {"shape": ShapeSpec(**shape)}
    names = list(dict.fromkeys([*own, *args.send]))
    if names:
        fields["inputs"] = tuple(InputSpec(n, dims=_ints(own[n], f"--shape {n}:") if n in own else None,
                                           send=True if n in args.send else None) for n in names)
    if args.input_data:
        fields["data"] = args.input_data
    if args.string_len:
        lengths = _ints(args.string_len, "--string-len", ":")
        fields["string_len"] = (lengths[0], lengths[-1])
    return fields


def _ints(text: str, what: str, sep: str = ",") -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(sep))
    except ValueError:
        raise ValueError(f"{what} takes whole numbers separated by {sep!r}, got {text!r}") from None


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"arrival parameters look like KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def run_command(args: argparse.Namespace) -> int:
    """Run the load, print the summary, write JSON and records; return the exit status."""
    spec = spec_from_args(args)
    if spec.duration_s is None and spec.max_requests is None:
        raise ValueError("give --duration or --max-requests: a command-line run needs a bound")
    stats = stats_for(spec)
    sinks = [stats]
    sink = JsonlSink(args.records) if args.records else None
    if sink:
        sinks.append(sink)
    try:
        asyncio.run(LoadRun(spec, args.url, sinks, on_start=stats.set_start, grpc_url=args.grpc_url).run())
    finally:
        if sink:
            sink.close()
    summary = stats.summary()
    if not args.quiet:
        print(format_summary(summary, spec), end="")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(json_summary(summary, spec), indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of python -m loadgen."""
    args = parser().parse_args(argv)
    if args.command == "worker":
        from loadgen.worker import worker_main  # noqa: PLC0415 - only the worker needs it

        return worker_main()
    try:
        return run_command(args)
    except (ValueError, OSError, RuntimeError, ArithmeticError) as exc:  # ArithmeticError: a whole number of inf
        print(f"error: {exc}", file=sys.stderr)
        return 2
