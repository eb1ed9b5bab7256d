"""Serving during an Apply: python -m bench.apply_stall [--reps 3] [--applies 6].

Each repetition starts a fresh embedded server (evhtp spreads connections over its workers differently on
each start, so one start proves little), drives gpu_sim with closed-loop traffic at concurrency 8, and makes
Applies through ConfigService — the lab's whole path: validate, reload, smoke-verify, persist — alternating a
new max_queue_delay and a new instance count. The model control API is reached over HTTP (what the lab did
before) and over gRPC (what it does now), and the traffic comes from the lab's load generator (in process,
as the dashboard runs it) and from perf_analyzer (the reference client, its own process), side by side.

Reported per (traffic, transport): steady throughput before the first Apply, throughput while Applies run
(as a ratio of steady), the longest stretch with no answer inside an Apply, and the p99 of requests that
overlapped an Apply. Output: a table and, with --json, one JSON object.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from app.config.apply import ConfigService
from app.config.history import ConfigHistory
from app.paths import MODEL_REPOSITORY
from app.server.control import ModelControl
from app.server.embedded import EmbeddedServer, ServerOptions
from bench.perf_analyzer import ensure_perf_analyzer
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec

MODEL = "gpu_sim"
CONCURRENCY = 8


class Completions:
    """(sent, done) epoch pairs of every answered request, from whichever client."""

    def __init__(self) -> None:
        self.pairs: list[tuple[float, float]] = []
        self.failed = 0
        self._lock = threading.Lock()

    def add(self, pairs) -> None:
        with self._lock:
            self.pairs.extend(pairs)


def lab_traffic(url: str, seconds: float, out: Completions) -> threading.Thread:
    """Run the lab's load generator in a thread, as the dashboard does; record every answered request."""
    spec = LoadSpec(model=MODEL, concurrency=CONCURRENCY, duration_s=seconds, seed=7)
    t0 = {}

    def sink(records) -> None:
        base = t0.get("epoch", 0.0)
        out.add((base + r.sent_s, base + r.sent_s + r.latency_s) for r in records if not r.error)
        out.failed += sum(1 for r in records if r.error)

    run = LoadRun(spec, url, [sink], on_start=lambda epoch: t0.__setitem__("epoch", epoch))
    thread = threading.Thread(target=lambda: asyncio.run(run.run()), daemon=True)
    thread.start()
    return thread


def pa_traffic(host_port: str, seconds: float, workdir: Path, out: Completions) -> threading.Thread:
    """Run perf_analyzer (its own process) for about `seconds`; read per-request times from its profile export."""
    binary, env = ensure_perf_analyzer(Path.home() / ".cache" / "triton-batching-lab" / "perf_analyzer")
    export = workdir / "pa_export.json"
    argv = [str(binary), "-m", MODEL, "-u", host_port, "-i", "http", "--concurrency-range", str(CONCURRENCY),
            "--shape", "INPUT:256", "--measurement-mode", "time_windows",
            # perf_analyzer reads the model's statistics at each window boundary and exits when a reload makes
            # that call fail ("failed to find the requested model version"), so every Apply sits inside the first
            # window; it then needs two more windows that always count as stable before it writes the export.
            "--measurement-interval", str(int(seconds * 1000)), "--max-trials", "3",
            "--stability-percentage", "999", "--profile-export-file", str(export)]

    def main() -> None:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3 * seconds + 120, check=False)
        if not export.exists():
            raise RuntimeError(f"perf_analyzer exited {done.returncode} without an export: {done.stdout[-400:]} {done.stderr[-800:]}")
        data = json.loads(export.read_text())
        for experiment in data.get("experiments", []):
            out.add((r["timestamp"] / 1e9, r["response_timestamps"][-1] / 1e9)  # epoch ns
                    for r in experiment.get("requests", []) if r.get("response_timestamps"))

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread


def one_rep(traffic: str, transport: str, applies: int, workdir: Path) -> dict:
    repo = workdir / "repo"
    shutil.copytree(MODEL_REPOSITORY, repo)
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                          models=(MODEL,), log_dir=workdir))
    endpoint = server.start()
    try:
        service = ConfigService(endpoint, repo, history=ConfigHistory(workdir / "history"))
        service.control = ModelControl(endpoint, prefer_grpc=(transport == "grpc"))
        assert service.control.transport.name == transport, service.control.transport
        base = service.current(MODEL)
        steady_s, gap_s = 4.0, 2.0
        seconds = steady_s + applies * (2.0 + gap_s) + 2.0
        out = Completions()
        thread = (lab_traffic(endpoint.http_url, seconds, out) if traffic == "lab"
                  else pa_traffic(endpoint.host_port, seconds, workdir, out))
        started = time.time()
        time.sleep(steady_s)
        windows = []
        for i in range(applies):
            config = type(base)()
            config.CopyFrom(base)
            config.dynamic_batching.max_queue_delay_microseconds = 500 + 100 * (i + 1)
            config.instance_group[0].count = 1 + (i // 2) % 2  # count changes every other Apply
            t0 = time.time()
            service.apply(MODEL, config)
            windows.append((t0, time.time()))
            time.sleep(gap_s)
        thread.join(3 * seconds + 180)
    finally:
        server.stop()
    pairs = sorted(out.pairs, key=lambda p: p[1])
    done = np.array([d for _, d in pairs])
    steady = ((done >= started + 1.0) & (done < started + steady_s)).sum() / (steady_s - 1.0)
    during_n = sum(((done >= a) & (done <= b)).sum() for a, b in windows)
    during_s = sum(b - a for a, b in windows)
    gaps = []
    for a, b in windows:
        inside = np.concatenate([[a], done[(done >= a) & (done <= b)], [b]])
        gaps.append(float(np.diff(inside).max()))
    overlapping = [d - s for s, d in pairs if any(s <= b and d >= a for a, b in windows)]
    calm = [d - s for s, d in pairs if s >= started + 1.0 and d < started + steady_s]
    return {
        "steady_rps": float(steady), "during_rps": float(during_n / during_s), "ratio": float(during_n / during_s / steady),
        "apply_s": statistics.mean(b - a for a, b in windows), "max_gap_s": max(gaps), "gaps_s": gaps,
        "p99_steady_ms": float(np.percentile(calm, 99) * 1e3), "p99_during_ms": float(np.percentile(overlapping, 99) * 1e3),
        "requests": len(pairs), "failed": out.failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--applies", type=int, default=6)
    parser.add_argument("--traffic", choices=("lab", "perf_analyzer", "both"), default="both")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    traffics = ("lab", "perf_analyzer") if args.traffic == "both" else (args.traffic,)
    results: dict[str, list[dict]] = {}
    for rep in range(args.reps):
        for traffic in traffics:
            for transport in ("http", "grpc"):
                with tempfile.TemporaryDirectory(prefix="apply-stall-") as tmp:
                    row = one_rep(traffic, transport, args.applies, Path(tmp))
                results.setdefault(f"{traffic}/{transport}", []).append(row)
                if not args.json:
                    print(f"rep {rep + 1} {traffic:13s} load over {transport:4s}: steady {row['steady_rps']:.0f}/s, "
                          f"during Applies {row['during_rps']:.0f}/s ({row['ratio']:.2f}x), apply {row['apply_s']:.2f} s, "
                          f"longest gap {row['max_gap_s']:.2f} s, p99 steady {row['p99_steady_ms']:.0f} ms "
                          f"during {row['p99_during_ms']:.0f} ms, failed {row['failed']}", flush=True)
    summary = {key: {"ratio_min": min(r["ratio"] for r in rows), "ratio_median": statistics.median(r["ratio"] for r in rows),
                     "max_gap_s": max(r["max_gap_s"] for r in rows),
                     "p99_during_ms_median": statistics.median(r["p99_during_ms"] for r in rows),
                     "p99_during_ms_max": max(r["p99_during_ms"] for r in rows)}
               for key, rows in results.items()}
    if args.json:
        print(json.dumps({"runs": results, "summary": summary}, indent=1))
    else:
        print("\nsummary (throughput during Applies / steady; longest no-answer stretch inside an Apply):")
        for key, s in summary.items():
            print(f"  {key:22s} ratio min {s['ratio_min']:.2f} median {s['ratio_median']:.2f}, "
                  f"longest gap {s['max_gap_s']:.2f} s, p99 during Applies median {s['p99_during_ms_median']:.0f} ms "
                  f"worst {s['p99_during_ms_max']:.0f} ms")


if __name__ == "__main__":
    main()
