"""Headless scenarios: python -m app.scenarios list | run NAME [--full] [--json OUT].

Runs on the embedded server (started here, on a temporary copy of model_repository/ so the checkout's
configs stay as they are) or on TRITON_URL's server; exits 0 when every check held, 1 when one did not,
2 when the scenario could not run to the end.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.scenarios.catalog import SCENARIOS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.scenarios", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="name, page and claim of every scenario")
    run = sub.add_parser("run", help="run one scenario and print its verdict")
    run.add_argument("name", choices=sorted(SCENARIOS))
    run.add_argument("--full", action="store_true", help="full-length phases (default: the shortened ones CI runs)")
    run.add_argument("--json", type=Path, help="write the phases' figures and the checks here")
    args = parser.parse_args(argv)
    if args.command == "list":
        for s in SCENARIOS.values():
            print(f"{s.name:16} [{s.page}] {s.title} ({s.source})\n{'':16} {s.expect}")
        return 0
    return _run(SCENARIOS[args.name], args.full, args.json)


def _run(scenario, full: bool, out: Path | None) -> int:
    from app.cli.headless import cancel_on_signals, headless_lab, printer  # noqa: PLC0415 - a server is for `run` only
    from app.scenarios.runner import check_phases, run_scenario  # noqa: PLC0415

    try:  # the phases inside the one table of load bounds (loadgen.limits): refused before a server starts
        check_phases(scenario.phases(full))
    except ValueError as exc:
        print(f"error: {scenario.name}: {exc}", file=sys.stderr)
        return 2
    try:
        with headless_lab(None, scenario.model) as (lab, _where), cancel_on_signals() as cancel:
            print(f"{scenario.title} — expected: {scenario.expect}", flush=True)
            result = run_scenario(lab, scenario, full=full, progress=printer(), cancel=cancel)
    except ValueError as exc:  # the server lacks the models it needs, or cannot serve them: said, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for check in result.checks:
        print(f"{'PASS' if check.ok else 'FAIL'}  {check.claim}: {check.measured} (held to {check.margin})")
    if caution := result.caution():
        print(f"CAUTION  {caution}")
    print(f"{scenario.name}: {'passed' if result.passed else result.status if result.status != 'done' else 'failed'}"
          f" in {result.wall_s:,.0f} s" + (f" — {result.note}" if result.note else ""))
    if out is not None:
        out.write_text(json.dumps(result.to_dict(), indent=1, default=str))
    return 0 if result.passed else (1 if result.status == "done" else 2)


if __name__ == "__main__":
    sys.exit(main())
