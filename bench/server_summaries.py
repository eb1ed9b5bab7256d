"""What Triton's latency summaries cost the server it measures: python -m bench.server_summaries.

Two embedded servers in turn, each on a fresh copy of one model (default mlp, where the host is the limit): the first
as the lab starts one now (no summaries, Triton's default), the second with TBL_SERVER_SUMMARIES=1
(`--metrics-config=summary_latencies=true`, as every server the lab started before 2026-12-07). Each gets the same
closed loop (--concurrency in flight, --seconds); per slice of --slice-s: the answers per second its clients got and
the tritonserver process's CPU per 1,000 answers (user + system, from /proc). Reported: every slice, the mean of the
last --steady-s of each, and the ratios (with summaries / without). The summaries' quantile sketches hold the last
minute's requests, so their cost grows over the first minute: --seconds should be well past 60.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from app.paths import MODEL_REPOSITORY
from app.server.embedded import SUMMARIES_VARIABLE
from app.traffic.form import TrafficForm, build_spec
from bench.dashboard_overhead import children, cpu_seconds
from bench.twin_accuracy import MODELS  # where each model of the benches lives (any other: the lab's own)


def slices(done_s: list[float], cpu: list[tuple[float, float]], slice_s: float, seconds: float) -> list[dict]:
    """Return per slice [k·slice_s, (k+1)·slice_s) of the run: answers per second (from the answers' times, s since
    the run began) and the server's CPU ms per 1,000 answers (from (s since the run began, CPU s) samples, the
    difference between the samples nearest each edge)."""
    out = []
    for k in range(int(seconds // slice_s)):
        t0, t1 = k * slice_s, (k + 1) * slice_s
        answers = sum(t0 <= t < t1 for t in done_s)
        inside = [c for t, c in cpu if t0 - slice_s / 4 <= t <= t1 + slice_s / 4]
        before = min(cpu, key=lambda x: abs(x[0] - t0), default=None)
        after = min(cpu, key=lambda x: abs(x[0] - t1), default=None)
        used = (after[1] - before[1]) * slice_s / (after[0] - before[0]) if inside and after[0] > before[0] else None
        out.append({"from_s": t0, "answers_per_s": answers / slice_s,
                    "server_cpu_ms_per_1000": used * 1e6 / answers if used is not None and answers else None})
    return out


def steady(rows: list[dict], steady_s: float, slice_s: float) -> dict:
    """Return the mean answers per second and CPU per 1,000 answers over the last steady_s of the slices."""
    last = rows[-max(1, int(steady_s // slice_s)):]
    cpu = [r["server_cpu_ms_per_1000"] for r in last if r["server_cpu_ms_per_1000"] is not None]
    return {"answers_per_s": sum(r["answers_per_s"] for r in last) / len(last),
            "server_cpu_ms_per_1000": sum(cpu) / len(cpu) if cpu else None}


def _program(pid: int) -> str:
    """Return the file name of the program a process runs ('' when it is gone)."""
    try:
        return Path(os.fsdecode(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0])).name
    except OSError:
        return ""


def phase(model: str, summaries: bool, concurrency: int, seconds: float, slice_s: float) -> list[dict]:
    """Run the closed loop on a fresh embedded server, with or without the summaries; return its slices."""
    from app.lab.root import Lab  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="tbl-summaries-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(MODELS.get(model, MODEL_REPOSITORY) / model, repo / model,
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.environ["TBL_STATE_DIR"] = str(Path(tmp) / "state")
        if summaries:
            os.environ[SUMMARIES_VARIABLE] = "1"
        else:
            os.environ.pop(SUMMARIES_VARIABLE, None)
        lab = Lab.create({"TBL_MODEL_REPOSITORY": str(repo)})
        try:
            server = [pid for pid in children(os.getpid()) if _program(pid) == "tritonserver"]  # not its stubs
            done: list[float] = []
            unsubscribe = lab.traffic_records(lambda batch: done.extend(
                r.sent_s + r.latency_s for r in batch if not r.error))
            lab.start_traffic(build_spec(TrafficForm(model=model, mode="closed", concurrency=concurrency,
                                                     duration_s=seconds), lab.served_config(model)))
            while lab.traffic().started_at is None and lab.traffic().running:
                time.sleep(0.01)
            began = lab.traffic().started_at or time.time()
            cpu = []
            while lab.traffic().running:
                cpu.append((time.time() - began, cpu_seconds(server)))
                time.sleep(0.5)
            time.sleep(0.3)  # the last records' hand-over
            unsubscribe()
        finally:
            lab.close()
            os.environ.pop(SUMMARIES_VARIABLE, None)
    return slices(done, cpu, slice_s, seconds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mlp")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--seconds", type=float, default=80.0)
    p.add_argument("--slice-s", type=float, default=5.0)
    p.add_argument("--steady-s", type=float, default=20.0, help="the end of each run its figures are taken over")
    p.add_argument("--json", type=Path, help="write every figure here")
    args = p.parse_args(argv)
    runs = {}
    for name, summaries in (("without", False), ("with", True)):
        rows = phase(args.model, summaries, args.concurrency, args.seconds, args.slice_s)
        runs[name] = {"slices": rows, "steady": steady(rows, args.steady_s, args.slice_s)}
        print(f"{name} summaries:", flush=True)
        for r in rows:
            cpu = r["server_cpu_ms_per_1000"]
            print(f"  {r['from_s']:5.0f} s: {r['answers_per_s']:8,.0f} answers/s, server "
                  f"{'—' if cpu is None else f'{cpu:.1f}'} ms CPU per 1,000", flush=True)
    off, on = runs["without"]["steady"], runs["with"]["steady"]
    ratios = {"answers_per_s": on["answers_per_s"] / off["answers_per_s"] if off["answers_per_s"] else None,
              "server_cpu_ms_per_1000": on["server_cpu_ms_per_1000"] / off["server_cpu_ms_per_1000"]
              if on["server_cpu_ms_per_1000"] and off["server_cpu_ms_per_1000"] else None}
    result = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "model": args.model,
              "concurrency": args.concurrency, "seconds": args.seconds, "steady_s": args.steady_s,
              "runs": runs, "with_over_without": ratios}
    print(json.dumps({"without": off, "with": on, "with_over_without": ratios}, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
