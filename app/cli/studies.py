"""Headless studies: python -m app.experiments sweep ... | ab ... | trace-sweep ... [--json OUT] [--report OUT.html];
and the autopilot: python -m app.experiments autopilot ... (its exit codes: app.cli.autopilot).

Runs on the embedded server (started here on a temporary copy of --model-repository, else of TBL_MODEL_REPOSITORY's
folder as the dashboard takes it, else of the lab's model_repository/, so the folder's configs stay as they are; a
folder or model that is not there is refused before it starts) or on TRITON_URL's server (with TRITON_GRPC_URL,
TRITON_CONTROL_KEY, TRITON_MODEL_REPOSITORY as the dashboard takes them). Exits 0 when the study is done (a sweep
found an operating point; an A/B found a clear difference, or none was required; a trace-judged sweep found a
configuration that holds the SLA through the trace), 1 when no configuration met the budget (or no clear difference
where --require-difference asked for one; or none held the SLA through the trace), 2 when it failed: refused,
interrupted, cancelled (Ctrl-C: the starting config serves again first) or bad arguments — the message on stderr.
"""
from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from app.lab.ports import LabPort
from app.experiments.ab.arms import parse_assignments
from app.cli.output import ab_summary, sweep_summary, write_outputs
from app.cli.headless import cancel_on_signals, headless_lab, printer

DONE_OK, NOT_MET, FAILED = 0, 1, 2


def _numbers(kind):
    """Return an argparse type reading '1,2,4' as a tuple of kind."""
    def parse(text: str) -> tuple:
        try:
            return tuple(kind(p) for p in text.replace(" ", "").split(",") if p)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of "
                                             f"{'whole numbers' if kind is int else 'numbers'}") from None
    return parse


def _preferred(text: str) -> tuple:
    """Return preferred-size sets from '4,8;8,16'."""
    return tuple(_numbers(int)(part) for part in text.split(";") if part.strip())


def parser() -> argparse.ArgumentParser:
    """Return the command line's parser (exits 2 with a message on a bad argument, as argparse does)."""
    from app.experiments.sweep.space import P99_HEADROOM  # noqa: PLC0415 - the sweep's default headroom
    top = argparse.ArgumentParser(prog="python -m app.experiments", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--model", required=True, help="the model to study (any model the server serves)")
    common.add_argument("--model-repository", type=Path, help="the repository the embedded server serves a "
                        "temporary copy of (default: TBL_MODEL_REPOSITORY, else the lab's); not with TRITON_URL")
    common.add_argument("--json", type=Path, help="write the study's definition, figures and outcome here")
    common.add_argument("--report", type=Path, help="write the self-contained HTML report here")
    common.add_argument("--label", default="", help="the study's label (stored with it)")
    common.add_argument("--seed", type=int, default=1, help="the load's seed (default 1)")
    sweep = sub.add_parser("sweep", parents=[common], help="search configurations × loads for the SLA operating point")
    sweep.add_argument("--instances", type=_numbers(int), default=(), help="instance counts, e.g. 1,2")
    sweep.add_argument("--delay-us", type=_numbers(int), default=(), help="max_queue_delay values (µs), e.g. 0,2000")
    sweep.add_argument("--max-batch-size", type=_numbers(int), default=(), help="max_batch_size values")
    sweep.add_argument("--preferred", type=_preferred, default=(), help="preferred-size sets, e.g. '4,8;8,16'")
    sweep.add_argument("--no-default", action="store_true", help="leave out the config serving at the start")
    loads = sweep.add_mutually_exclusive_group(required=True)
    loads.add_argument("--concurrency", type=_numbers(float), help="closed-loop loads, e.g. 1,2,4,8,16")
    loads.add_argument("--rate", type=_numbers(float), help="open-loop loads (req/s), e.g. 50,100,200")
    sweep.add_argument("--p99-ms", type=float, required=True, help="the p99 budget (client side, ms)")
    sweep.add_argument("--min-throughput", type=float, help="the SLA's throughput floor (req/s)")
    sweep.add_argument("--p99-headroom", type=float, default=P99_HEADROOM * 100, metavar="PCT",
                       help="a p99 inside the budget but within this %% of it is on the budget's edge, named only "
                            f"when no point has room (default {P99_HEADROOM * 100:g}; 0: the budget alone)")
    sweep.add_argument("--grid", action="store_true", help="measure every point (default: adaptive search)")
    sweep.add_argument("--window-s", type=float, default=0.5, help="measurement window (s, default 0.5)")
    sweep.add_argument("--max-windows", type=int, default=12, help="windows before a point counts as unsettled")
    sweep.add_argument("--twin-top", type=int, default=0, help="let the twin rank every configuration and measure "
                       "only the top N (default 0: measure them all)")
    ab = sub.add_parser("ab", parents=[common], help="compare configurations under identical traffic, in trials")
    for letter in "abcd":
        ab.add_argument(f"--{letter}", required=letter in "ab", metavar="ARM",
                        help="knob assignments over the serving config ('delay_us=5000 instances=2', 'serving'), "
                             "or @FILE: a config.pbtxt" + (" (the baseline)" if letter == "a" else ""))
    level = ab.add_mutually_exclusive_group()
    level.add_argument("--rate", type=float, help="open loop: requests/s")
    level.add_argument("--concurrency", type=int, help="closed loop: requests in flight")
    ab.add_argument("--sla-ms", type=float, default=50.0, help="the SLA goodput counts against (ms, default 50)")
    ab.add_argument("--trials", type=int, default=4, help="trials, each running every arm once (default 4)")
    ab.add_argument("--trial-s", type=float, default=5.0, help="seconds measured per trial (default 5)")
    ab.add_argument("--warmup-s", type=float, default=1.0, help="warm-up dropped per trial (s, default 1)")
    ab.add_argument("--min-effect", type=float, default=0.03, help="smallest difference called (default 0.03)")
    ab.add_argument("--require-difference", action="store_true",
                    help="exit 1 unless some arm differs clearly from A on goodput, p99 or throughput")
    _trace_args(ab, required=False, what="instead of --rate/--concurrency: each trial plays this trace once")
    trace = sub.add_parser("trace-sweep", parents=[common],
                           help="play a request-rate trace on each configuration; recommend the cheapest that holds")
    _trace_args(trace, required=True, what="the trace every configuration plays once")
    trace.add_argument("--sla-ms", type=float, required=True, help="the p99 SLA (client side, ms)")
    trace.add_argument("--instances", type=_numbers(int), default=(), help="instance counts, e.g. 1,2,3")
    trace.add_argument("--delays", type=_numbers(int), default=(), help="max_queue_delay values (µs), e.g. 0,500")
    trace.add_argument("--include-default", action="store_true", help="also play the config serving at the start")
    from app.cli.autopilot import add_arguments  # noqa: PLC0415 - the autopilot's own arguments, beside the studies

    add_arguments(sub, common, _numbers)
    from app.cli.twin import add_arguments as add_predict  # noqa: PLC0415 - the twin's predictions

    add_predict(sub, common, _numbers)
    return top


def _trace_args(sub, required: bool, what: str) -> None:
    """Add the trace's arguments: which trace, compress, scale, arrivals inside a step."""
    sub.add_argument("--trace", required=required, help=f"{what}: diurnal, flash_crowd or a rate file (CSV t,rate; "
                     "JSON; perf_analyzer intervals)")
    sub.add_argument("--compress", type=float, default=1.0, help="recorded seconds per played second (default 1)")
    sub.add_argument("--scale", type=float, default=1.0, help="rate multiplier (default 1)")
    sub.add_argument("--process", choices=("poisson", "constant"), default="poisson",
                     help="arrivals inside a step (default poisson)")
    sub.add_argument("--tolerance", type=float, default=0.01,
                     help="share of the played seconds a configuration may spend over the SLA and still hold it "
                          "(default 0.01)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "trace-sweep":
            return _trace_sweep(args)
        if args.command == "autopilot":
            from app.cli.autopilot import run  # noqa: PLC0415

            return run(args)
        if args.command == "predict":
            from app.cli.twin import run as predict  # noqa: PLC0415

            return predict(args)
        return _ab(args)
    except KeyboardInterrupt:  # before the study began (starting the server): nothing to restore
        print("error: interrupted", file=sys.stderr)
        return FAILED
    except (ValueError, OSError, RuntimeError) as exc:  # refused, or the server could not start: said, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return FAILED
    except Exception:  # noqa: BLE001 - anything else failed the study too: 2, never 1 (that means "not met")
        traceback.print_exc()
        return FAILED


# --- sweep ---------------------------------------------------------------------------------------------------------
def _sweep(args) -> int:
    from app.experiments.sweep.space import CONCURRENCY, RATE, SearchSpace  # noqa: PLC0415
    from app.experiments.stored import read_sweep  # noqa: PLC0415
    from app.experiments.sweep.sweeper import SweepOptions, run_sweep  # noqa: PLC0415

    space = SearchSpace(model=args.model, instances=args.instances, delays_us=args.delay_us,
                        max_batch_sizes=args.max_batch_size, preferred=args.preferred,
                        include_default=not args.no_default, load_kind=CONCURRENCY if args.concurrency else RATE,
                        loads=args.concurrency or args.rate, p99_budget_ms=args.p99_ms,
                        min_throughput_rps=args.min_throughput, adaptive=not args.grid,
                        p99_headroom=args.p99_headroom / 100)
    options = SweepOptions(window_s=args.window_s, max_windows=args.max_windows, seed=args.seed,
                           twin_top=args.twin_top)
    with headless_lab(args.model_repository, args.model) as (lab, where), cancel_on_signals() as cancel:
        print(f"sweep of {args.model} on {where}: {len(space.choices())} configurations × {len(space.loads)} "
              f"{space.load_kind} levels (at most {space.points()} points), p99 budget {space.p99_budget_ms:g} ms",
              flush=True)
        result = run_sweep(lab, space, label=args.label, options=options, progress=printer(), cancel=cancel)
        study = lab.study(result.study_id)
        stored = read_sweep(lab, study)  # the report shows what was stored, as the page does
    code = DONE_OK if result.status == "done" and result.best is not None else (
        NOT_MET if result.status == "done" else FAILED)
    data, lines = sweep_summary(result, options, where, code, (study.result or {}).get("twin"))
    return _finish(code, lines, data, args, lambda: _sweep_html(stored))


def _sweep_html(record) -> str:
    from app.experiments.report.html_report import sweep_report  # noqa: PLC0415 - charts and vl-convert only when asked for

    if record.broken:
        raise ValueError(f"the stored sweep cannot be reported: {record.broken}")
    return sweep_report(record.study, record.points, record.space)


# --- trace-judged sweep ---------------------------------------------------------------------------------------------
def _trace_sweep(args) -> int:
    from app.experiments.trace.trace_output import trace_sweep_html, trace_sweep_summary  # noqa: PLC0415
    from app.experiments.trace.play import TraceLoad  # noqa: PLC0415
    from app.experiments.trace.trace_sweep import TraceSweepPlan, run_trace_sweep  # noqa: PLC0415

    load = TraceLoad(args.trace, args.compress, args.scale, args.process)
    plan = TraceSweepPlan(args.model, load, args.sla_ms, args.instances, args.delays, args.include_default, args.seed,
                          args.tolerance)  # the trace and the grid are checked before any server starts
    with headless_lab(args.model_repository, args.model) as (lab, where), cancel_on_signals() as cancel:
        print(f"trace-judged sweep of {args.model} on {where}: {len(plan.space().choices())} configurations, each "
              f"playing {load.describe()} once ({plan.spec().duration_s:,.1f} s), SLA p99 {args.sla_ms:g} ms",
              flush=True)
        result = run_trace_sweep(lab, plan, label=args.label, progress=printer(), cancel=cancel)
    held = result.verdict is not None and bool(result.verdict.holds)
    code = FAILED if result.status != "done" else (DONE_OK if held else NOT_MET)
    data, lines = trace_sweep_summary(result, where, code)
    return _finish(code, lines, data, args, lambda: trace_sweep_html(result))


# --- A/B -------------------------------------------------------------------------------------------------------------
def _ab(args) -> int:
    from app.experiments.ab.comparison import ABPlan, Arm, run_ab  # noqa: PLC0415

    typed = [(letter.upper(), getattr(args, letter), _arm_text(getattr(args, letter), letter)) for letter in "abcd"
             if getattr(args, letter) is not None]
    spec = _ab_spec(args)
    placeholder = tuple(Arm(letter, f'name: "{args.model}"') for letter, _, _ in typed)
    ABPlan(args.model, placeholder, spec, args.trials, args.trial_s, args.warmup_s, args.min_effect,
           tolerance=args.tolerance)  # bounds first
    with headless_lab(args.model_repository, args.model) as (lab, where), cancel_on_signals() as cancel:
        arms, defined = _define_arms(lab, args.model, typed)
        plan = ABPlan(args.model, arms, spec, args.trials, args.trial_s, args.warmup_s, args.min_effect,
                      tolerance=args.tolerance)
        for (letter, _, _), arm in zip(typed, defined):
            print(f"{letter}: {arm.name}", flush=True)
        print(f"A/B of {args.model} on {where}: {len(arms)} configurations × {plan.trials} trials of "
              f"{plan.trial_s:g} s (+{plan.warmup_s:g} s warm-up)", flush=True)
        result = run_ab(lab, plan, label=args.label, progress=printer(), cancel=cancel)
        study = lab.study(result.study_id)
    data, lines, clear = ab_summary(result, typed, defined, where)
    code = FAILED if result.status != "done" else (NOT_MET if args.require_difference and not clear else DONE_OK)
    data["exit_code"] = code
    return _finish(code, lines, data, args, lambda: _ab_html(study, result))


def _ab_html(study, result) -> str:
    from app.experiments.report.html_report import ab_report  # noqa: PLC0415

    return ab_report(study, result)


def _arm_text(value: str, letter: str) -> str:
    """Return an arm as typed, or the config.pbtxt an @FILE names; knob assignments are checked here, before any
    server starts."""
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        try:
            return path.read_text()
        except OSError as exc:
            raise ValueError(f"--{letter} {value}: cannot read that config.pbtxt ({exc.strerror})") from exc
    if ":" not in value and "{" not in value:
        try:
            parse_assignments(value)
        except ValueError as exc:
            raise ValueError(f"--{letter}: {exc}") from exc
    return value


def _ab_spec(args) -> dict:
    from loadgen.spec import LoadSpec, Mode, TrafficClass  # noqa: PLC0415
    from loadgen.specfile import spec_to_dict  # noqa: PLC0415

    classes = (TrafficClass(sla_ms=args.sla_ms),)
    if args.trace is not None:
        from app.experiments.trace.play import TraceLoad  # noqa: PLC0415

        if args.rate is not None or args.concurrency is not None:
            raise ValueError("--trace plays the trace's own rates: leave out --rate and --concurrency")
        spec = TraceLoad(args.trace, args.compress, args.scale, args.process).spec(args.model, args.sla_ms, args.seed)
    elif args.rate is not None:
        spec = LoadSpec(mode=Mode.OPEN, rate=args.rate, model=args.model, seed=args.seed, classes=classes)
    elif args.concurrency is not None:
        spec = LoadSpec(mode=Mode.CLOSED, concurrency=args.concurrency, model=args.model, seed=args.seed,
                        classes=classes)
    else:
        raise ValueError("give the comparison's traffic: --rate, --concurrency or --trace")
    return spec_to_dict(spec)


def _define_arms(lab: LabPort, model: str, typed: list[tuple[str, str, str]]):
    """Return the plan's arms ('A (delay 500 → 5000 µs)') and their definitions, over the config serving now: an
    @FILE is a config.pbtxt as written, anything else knob assignments (or a config pasted inline)."""
    from app.experiments.ab.comparison import Arm  # noqa: PLC0415
    from app.experiments.ab.arms import define, from_text  # noqa: PLC0415
    from app.text_limits import MAX_ARM_CHARS, fit  # noqa: PLC0415

    served, file_text = lab.served_config(model), lab.file_text(model)
    arms, defined = [], []
    for letter, as_typed, text in typed:
        try:
            arm = from_text(served, text) if as_typed.startswith("@") else define(served, text, file_text)
        except ValueError as exc:
            raise ValueError(f"--{letter.lower()}: {exc}") from exc
        defined.append(arm)
        arms.append(Arm(fit(f"{letter} ({arm.name})", MAX_ARM_CHARS), arm.text))
    return tuple(arms), defined


# --- shared ---------------------------------------------------------------------------------------------------------
def _finish(code: int, lines: list[str], data: dict, args, html) -> int:
    """Print the summary, write the JSON and the report; return the exit code (a failed study's note on stderr)."""
    for line in lines:
        print(line, flush=True)
    write_outputs(data, args.json, args.report, html)
    if code == FAILED:
        status, note = data["status"], data["note"]
        print(f"error: the {args.command} ended {status}" + (f": {note.removeprefix(status + ': ')}" if note else ""),
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
