"""Side by side with perf_analyzer on a trivial identity model: python -m bench.vs_perf_analyzer [--busy].

Closed loop: perf_analyzer, `python -m loadgen run` (its own process, as perf_analyzer runs in its own) and the
dashboard's path (LoadController: the worker process, records piped back) take turns at the same concurrency.
Open loop: the send lateness of a Poisson schedule. A busy dashboard: the same open loop run by the worker process
and on a thread of this process while another thread of it spins (as Streamlit's script runs do), each send's
lateness. --busy runs `stress-ng --cpu 1` (Debian's) beside all of them for the whole comparison: one of the two
cores kept busy by other work, as on a shared machine.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.server.embedded import EmbeddedServer, ServerOptions
from bench.perf_analyzer import ensure_perf_analyzer, run_perf_analyzer
from loadgen.controller import LoadController
from loadgen.report import json_summary
from loadgen.inputs.shapes import ShapeSpec
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec, Mode, TrafficClass

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
MODEL, SHAPE = "identity", 16


def loadgen(url: str, out: Path, *load: str, duration_s: float, warmup_s: float = 0.0) -> dict:
    """Run python -m loadgen in its own process (as perf_analyzer runs in its own); return its JSON."""
    argv = [sys.executable, "-m", "loadgen", "run", "--url", url, "--model", MODEL, "--shape", str(SHAPE), *load,
            "--duration", str(duration_s), "--warmup", str(warmup_s), "--json", str(out), "--quiet"]
    subprocess.run(argv, check=True, cwd=HERE.parent, timeout=duration_s + 120)
    return json.loads(out.read_text())


def dashboard(ctl: LoadController, concurrency: int, duration_s: float, warmup_s: float) -> dict:
    """Run the closed loop the dashboard's way (its worker process); return the run's JSON summary."""
    spec = LoadSpec(model=MODEL, concurrency=concurrency, duration_s=duration_s, warmup_s=warmup_s,
                    classes=(TrafficClass(shape=ShapeSpec(dims=(SHAPE,))),))
    ctl.start(spec)
    if not ctl.wait(duration_s + 60):
        raise RuntimeError("the dashboard's run did not end")
    snap = ctl.snapshot(window_s=0)
    if snap.error:
        raise RuntimeError(f"the dashboard's run failed: {snap.error}")
    return json_summary(snap.summary, spec)


def busy_dashboard(url: str, rate: float, seconds: float) -> dict:
    """Run one open loop by the worker process, then on a thread of this process, while a thread here spins; return
    each one's share of first attempts sent over 1 ms late and their median lateness (µs)."""
    spec = LoadSpec(model=MODEL, mode=Mode.OPEN, rate=rate, duration_s=seconds,
                    classes=(TrafficClass(shape=ShapeSpec(dims=(SHAPE,))),))
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            for _ in range(1000):
                x += 1

    hog = threading.Thread(target=spin, daemon=True)
    hog.start()
    try:
        by_worker: list = []
        ctl = LoadController(url)
        ctl.subscribe(by_worker.extend)
        try:
            ctl.start(spec)
            if not ctl.wait(seconds + 60):
                raise RuntimeError("the worker's run did not end")
        finally:
            ctl.close()
        here: list = []
        run = LoadRun(spec, url, [here.extend])
        thread = threading.Thread(target=lambda: asyncio.run(run.run()))
        thread.start()
        thread.join(seconds + 60)
    finally:
        stop.set()
        hog.join()
    return {"rate": rate, "seconds": seconds, "worker": _lateness(by_worker), "in_process": _lateness(here)}


def _lateness(records: list) -> dict:
    first = sorted(r.lateness_s for r in records if r.attempt == 1)
    return {"sent": len(first), "late_share": sum(r.late for r in records if r.attempt == 1) / max(len(first), 1),
            "median_lateness_us": first[len(first) // 2] * 1e6 if first else None}


def busy_core(seconds: float) -> subprocess.Popen:
    """Start stress-ng keeping one core busy (ended by its PID, or by its own timeout)."""
    binary = shutil.which("stress-ng")
    if binary is None:
        raise FileNotFoundError("--busy needs stress-ng (apt-get install stress-ng)")
    return subprocess.Popen([binary, "--cpu", "1", "--timeout", f"{int(seconds)}s", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    """Start the server, measure perf_analyzer and the load generator, print and save the ratios."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10.0, help="measurement time of each closed-loop run")
    p.add_argument("--rounds", type=int, default=2, help="alternate perf_analyzer and loadgen this many times")
    p.add_argument("--rate", type=float, default=1000.0, help="open-loop Poisson rate")
    p.add_argument("--open-seconds", type=float, default=60.0, help="long enough for Poisson counts to settle")
    p.add_argument("--spin-us", type=float, nargs="*", default=[0.0],
                   help="open-loop runs, one per busy-wait setting of the pacer")
    p.add_argument("--dashboard-rate", type=float, default=300.0, help="open-loop rate beside a busy dashboard")
    p.add_argument("--dashboard-seconds", type=float, default=3.0, help="each busy-dashboard run (0: skip them)")
    p.add_argument("--busy", action="store_true", help="keep one core busy with stress-ng --cpu 1 throughout")
    p.add_argument("--json", type=Path, default=None, help="default: out/vs_perf_analyzer[_busy].json")
    args = p.parse_args(argv)
    args.json = args.json or OUT / f"vs_perf_analyzer{'_busy' if args.busy else ''}.json"
    OUT.mkdir(parents=True, exist_ok=True)
    binary, env = ensure_perf_analyzer(OUT / "perf_analyzer")
    server = EmbeddedServer(ServerOptions(model_repository=HERE / "models", http_port=None, grpc_port=None,
                                          metrics_port=None, log_dir=OUT / "logs"))
    endpoint = server.start()
    stress = None
    ctl = LoadController(endpoint.http_url)
    try:
        if args.busy:
            stress = busy_core(args.rounds * (3 * args.seconds + 60) + len(args.spin_us) * args.open_seconds
                               + 2 * args.dashboard_seconds + 180)
        closed = []
        for i in range(args.rounds):
            pa = run_perf_analyzer(binary, env, endpoint.host_port, MODEL, args.concurrency, f"INPUT:{SHAPE}",
                                   int(args.seconds * 1000 / 3), OUT / f"pa_{i}.csv")
            ours = loadgen(endpoint.http_url, OUT / f"closed_{i}.json", "--concurrency", str(args.concurrency),
                           duration_s=args.seconds + 1, warmup_s=1.0)
            dash = dashboard(ctl, args.concurrency, args.seconds + 1, 1.0)
            closed.append({"perf_analyzer": pa, "loadgen": _brief(ours), "dashboard": _brief(dash)})
            print(f"round {i + 1}: perf_analyzer {pa['throughput_rps']:.0f}/s, loadgen {ours['throughput_rps']:.0f}/s,"
                  f" dashboard's worker {dash['throughput_rps']:.0f}/s")
        opened = [
            loadgen(endpoint.http_url, OUT / f"open_spin{spin:g}.json", "--rate", str(args.rate), "--arrival",
                    "poisson", "--spin-us", str(spin), duration_s=args.open_seconds)
            for spin in args.spin_us
        ]
        dashboard_busy = (busy_dashboard(endpoint.http_url, args.dashboard_rate, args.dashboard_seconds)
                          if args.dashboard_seconds > 0 else None)
    finally:
        ctl.close()
        if stress is not None:
            stress.terminate()
            stress.wait(10)
        server.stop()
    result = {**_result(args, closed, opened), "busy_dashboard": dashboard_busy}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    _print(result, args.json)
    return 0


def _brief(summary: dict) -> dict:
    return {"throughput_rps": summary["throughput_rps"], "latency_us": summary["latency_us"],
            "requests": summary["requests"], "lateness_us": summary["lateness_us"]}


def _result(args, closed: list[dict], opened: list[dict]) -> dict:
    pa = sum(r["perf_analyzer"]["throughput_rps"] for r in closed) / len(closed)
    ours = sum(r["loadgen"]["throughput_rps"] for r in closed) / len(closed)
    dash = sum(r["dashboard"]["throughput_rps"] for r in closed) / len(closed)
    return {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "busy": "stress-ng --cpu 1" if args.busy else None,
        "closed_loop": {"concurrency": args.concurrency, "rounds": closed, "perf_analyzer_rps": pa,
                        "loadgen_rps": ours, "ratio": ours / pa, "dashboard_rps": dash,
                        "dashboard_ratio": dash / pa},
        "open_loop": [_open_result(args, spin, summary) for spin, summary in zip(args.spin_us, opened)],
    }


def _open_result(args, spin_us: float, summary: dict) -> dict:
    sent = summary["requests"]["first_attempts"]
    achieved = sent / args.open_seconds
    return {
        "spin_us": spin_us, "target_rps": args.rate, "seconds": args.open_seconds, "sent": sent,
        "achieved_rps": achieved, "rate_error": achieved / args.rate - 1,
        # A Poisson schedule's count itself varies: its relative standard deviation, for scale.
        "poisson_sd": 1 / math.sqrt(args.rate * args.open_seconds),
        "late": summary["requests"]["late"], "lateness_us": summary["lateness_us"],
        "latency_us": summary["latency_us"], "ok": summary["requests"]["ok"],
    }


def _print(result: dict, path: Path) -> None:
    c = result["closed_loop"]
    beside = f" beside {result['busy']}" if result["busy"] else ""
    print(f"closed loop, concurrency {c['concurrency']}{beside}: loadgen {c['loadgen_rps']:.0f}/s vs perf_analyzer "
          f"{c['perf_analyzer_rps']:.0f}/s -> ratio {c['ratio']:.2f}; the dashboard's worker "
          f"{c['dashboard_rps']:.0f}/s -> ratio {c['dashboard_ratio']:.2f}")
    for o in result["open_loop"]:
        print(f"open loop, Poisson {o['target_rps']:.0f}/s for {o['seconds']:.0f} s, spin {o['spin_us']:g} us: "
              f"achieved {o['achieved_rps']:.1f}/s (error {o['rate_error']:+.2%}, Poisson sd {o['poisson_sd']:.2%});"
              f" send lateness p50 {o['lateness_us']['p50']:.0f} us, p99 {o['lateness_us']['p99']:.0f} us;"
              f" late {o['late']} of {o['sent']}")
    busy = result.get("busy_dashboard")
    if busy:
        worker, inside = busy["worker"], busy["in_process"]
        print(f"open loop {busy['rate']:.0f}/s beside a spinning thread of this process: the worker process "
              f"{worker['late_share']:.2f} late, median lateness {worker['median_lateness_us']:.0f} us; on a thread of "
              f"this process {inside['late_share']:.2f} late, median {inside['median_lateness_us']:.0f} us")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
