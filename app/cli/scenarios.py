"""Headless scenarios: python -m app.scenarios list | run NAME [--full] [--json OUT] | run --all [--json OUT].

Each scenario measures one claim of the source documents on the live server, judged with the margins measured
for it (app/scenarios/claims.py): these are the lab's measurements, run here, never in the test suite.
Runs on the embedded server (started here, on a temporary copy of model_repository/ so the checkout's
configs stay as they are) or on TRITON_URL's server; exits 0 when every check held, 1 when one did not,
2 when a scenario could not run to the end. --all runs every scenario in turn on one server.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.scenarios.claims import SCENARIOS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.scenarios", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="name, page and claim of every scenario")
    run = sub.add_parser("run", help="run one scenario and print its verdict")
    run.add_argument("name", nargs="?", choices=sorted(SCENARIOS))
    run.add_argument("--all", action="store_true", help="every scenario in turn (their verdicts, then a summary)")
    run.add_argument("--full", action="store_true", help="full-length phases (default: the shortened ones CI runs)")
    run.add_argument("--json", type=Path, help="write the phases' figures and the checks here (--all: a list)")
    args = parser.parse_args(argv)
    if args.command == "run" and bool(args.all) == bool(args.name):
        parser.error("run takes one scenario's NAME or --all")
    if args.command == "list":
        for s in SCENARIOS.values():
            print(f"{s.name:16} [{s.page}] {s.title} ({s.source})\n{'':16} {s.expect}")
        return 0
    chosen = list(SCENARIOS.values()) if args.all else [SCENARIOS[args.name]]
    return _run(chosen, args.full, args.json)


def _run(scenarios: list, full: bool, out: Path | None) -> int:
    from app.cli.headless import cancel_on_signals, headless_lab, printer  # noqa: PLC0415 - a server is for `run` only
    from app.scenarios.runner import check_phases, run_scenario  # noqa: PLC0415

    for scenario in scenarios:  # the phases inside the one table of load bounds (loadgen.limits): refused first
        try:
            check_phases(scenario.phases(full))
        except ValueError as exc:
            print(f"error: {scenario.name}: {exc}", file=sys.stderr)
            return 2
    results = []
    try:
        with headless_lab(None, scenarios[0].model, lab_models=True) as (lab, _where), \
                cancel_on_signals() as cancel:
            for scenario in scenarios:
                print(f"{scenario.title} — expected: {scenario.expect}", flush=True)
                results.append(run_scenario(lab, scenario, full=full, progress=printer(), cancel=cancel))
                _say(scenario, results[-1])
                if cancel.is_set():
                    break
    except ValueError as exc:  # the server lacks the models it needs, or cannot serve them: said, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(scenarios) > 1:
        print("\n" + "\n".join(f"{s.name:16} {'passed' if r.passed else r.status if r.status != 'done' else 'FAILED'}"
                                for s, r in zip(scenarios, results)))
    if out is not None:
        data = [r.to_dict() for r in results]
        out.write_text(json.dumps(data if len(scenarios) > 1 else data[0], indent=1, default=str))
    if any(r.status != "done" for r in results) or len(results) < len(scenarios):
        return 2
    return 0 if all(r.passed for r in results) else 1


def _say(scenario, result) -> None:
    """Print a scenario's checks and its verdict."""
    for check in result.checks:
        print(f"{'PASS' if check.ok else 'FAIL'}  {check.claim}: {check.measured} (held to {check.margin})")
    if caution := result.caution():
        print(f"CAUTION  {caution}")
    print(f"{scenario.name}: {'passed' if result.passed else result.status if result.status != 'done' else 'failed'}"
          f" in {result.wall_s:,.0f} s" + (f" — {result.note}" if result.note else ""), flush=True)

if __name__ == "__main__":
    sys.exit(main())
