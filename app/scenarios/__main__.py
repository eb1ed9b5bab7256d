"""Headless scenarios: python -m app.scenarios list | run NAME [--full] [--json OUT].

Runs on the embedded server (started here, on a temporary copy of model_repository/ so the checkout's
configs stay as they are) or on TRITON_URL's server; exits 0 when every check held, 1 when one did not,
2 when the scenario could not run to the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from app.paths import MODEL_REPOSITORY
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
    from app.lab import Lab  # noqa: PLC0415 - starting a server is for `run` only
    from app.scenarios.runner import check_phases, run_scenario  # noqa: PLC0415

    try:  # the phases inside the one table of load bounds (loadgen.limits): refused before a server starts
        check_phases(scenario.phases(full))
    except ValueError as exc:
        print(f"error: {scenario.name}: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tbl-scenario-") as tmp:
        env = dict(os.environ)
        if not env.get("TRITON_URL"):
            repo = Path(tmp) / "model_repository"
            shutil.copytree(MODEL_REPOSITORY, repo)
            env["TBL_MODEL_REPOSITORY"] = str(repo)
            os.environ.setdefault("TBL_STATE_DIR", str(Path(tmp) / "state"))
        lab = Lab.create(env)
        try:
            print(f"{scenario.title} — expected: {scenario.expect}", flush=True)
            printed = [0]

            def progress(p) -> None:  # print each log line once
                for line in p.log[printed[0]:]:
                    print(f"  {line}", flush=True)
                printed[0] = len(p.log)

            try:
                result = run_scenario(lab, scenario, full=full, progress=progress)
            except ValueError as exc:  # the server lacks the models it needs: said, not a traceback
                print(f"error: {exc}", file=sys.stderr)
                return 2
        finally:
            lab.close()
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
