"""The simulated device's teaching effects, measured repeatedly on this machine: python -m bench.gpu_sim_effects.

Each repetition measures, on a fresh embedded server with gpu_sim hot-reloaded between configurations:
  instances_1_to_2   throughput(2 instances) / throughput(1), unbatched, closed loop
  instances_2_to_8   throughput(8) / throughput(2), unbatched: flat once the device saturates
  compute_2_to_8     server compute time per request, 8 instances / 2: contention for the one device
  batching_gain      throughput(dynamic batching) / throughput(unbatched), 1 instance
  delay_cost_ms      p50(max_queue_delay 10 ms) - p50(delay 0) at a light open-loop rate
The spread of each ratio over the repetitions is the measurement: no test asserts these effects (the cost model
itself: tests/unit/models/test_gpu_sim.py; live, the instance-sweep and queue-delay scenarios judge them).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import tritonclient.http as http
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as mc

from app.metrics.deltas import model_row
from app.metrics.scrape import fetch_text, parse_metrics
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions
from loadgen.run import LoadRun
from loadgen.spec import ArrivalSpec, LoadSpec, Mode
from loadgen.stats import stats_for

MODEL = "gpu_sim"


def configure(repo: Path, instances: int, batching: bool, delay_us: int = 0, params: dict | None = None) -> mc.ModelConfig:
    """Return gpu_sim's shipped config with the instance count and batching set."""
    config = text_format.Parse((repo / MODEL / "config.pbtxt").read_text(), mc.ModelConfig())
    config.instance_group[0].count = instances
    if batching:
        config.dynamic_batching.max_queue_delay_microseconds = delay_us
    else:
        config.ClearField("dynamic_batching")
    for key, value in (params or {}).items():
        config.parameters[key].string_value = str(value)
    return config


def reload(endpoint, config: mc.ModelConfig) -> None:
    """Hot-reload gpu_sim with a config override (with the server's control key)."""
    http.InferenceServerClient(endpoint.host_port).load_model(MODEL, headers=endpoint.control_headers,
                                                             config=json_format.MessageToJson(config))


def measure(endpoint, spec: LoadSpec) -> dict:
    """Run a spec; return the whole-run client summary plus the server's compute time per request (counters)."""
    stats = stats_for(spec)
    before = parse_metrics(fetch_text(endpoint.metrics_url), time.time())
    asyncio.run(LoadRun(spec, endpoint.http_url, [stats]).run())
    after = parse_metrics(fetch_text(endpoint.metrics_url), time.time())
    return {**stats.summary()["all"], "compute_us": model_row(before, after, MODEL)["compute_us"]}


def effects(endpoint, repo: Path, seconds: float, params: dict) -> dict:
    """Measure every effect once."""
    closed = lambda c: LoadSpec(model=MODEL, concurrency=c, duration_s=seconds + 1, warmup_s=1.0, seed=1)  # noqa: E731
    light = LoadSpec(model=MODEL, mode=Mode.OPEN, rate=20.0, arrival=ArrivalSpec(), duration_s=seconds + 1,
                     warmup_s=1.0, seed=2)
    out = {}
    for name, instances, batching, delay, spec in (
        ("unbatched_1", 1, False, 0, closed(8)), ("unbatched_2", 2, False, 0, closed(8)),
        ("unbatched_8", 8, False, 0, closed(8)), ("batched_1", 1, True, 2000, closed(8)),
        ("light_delay_0", 1, True, 0, light), ("light_delay_10000", 1, True, 10000, light),
    ):
        reload(endpoint, configure(repo, instances, batching, delay, params))
        out[name] = measure(endpoint, spec)
    tp = {k: v["throughput_rps"] for k, v in out.items()}
    return {
        "instances_1_to_2": tp["unbatched_2"] / tp["unbatched_1"],
        "instances_2_to_8": tp["unbatched_8"] / tp["unbatched_2"],
        "compute_2_to_8": out["unbatched_8"]["compute_us"] / out["unbatched_2"]["compute_us"],
        "batching_gain": tp["batched_1"] / tp["unbatched_1"],
        "delay_cost_ms": out["light_delay_10000"]["p50_ms"] - out["light_delay_0"]["p50_ms"],
        "throughput": tp,
    }


def main(argv: list[str] | None = None) -> int:
    """Start a server, measure the effects `--repeat` times, print each and the spread."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds of each configuration")
    p.add_argument("--param", action="append", default=[], help="gpu_sim cost parameter override, KEY=VALUE")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    params = dict(kv.split("=", 1) for kv in args.param)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(MODEL_REPOSITORY, repo)
        server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                              models=(MODEL,), log_dir=Path(tmp)))
        endpoint = server.start()
        try:
            runs = []
            for i in range(args.repeat):
                runs.append(effects(endpoint, repo, args.seconds, params))
                print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items() if k != "throughput")
                      + " | infer/s " + ", ".join(f"{k} {v:.0f}" for k, v in runs[-1]["throughput"].items()), flush=True)
        finally:
            server.stop()
    summary = {}
    for key in (k for k in runs[0] if k != "throughput"):
        values = [r[key] for r in runs]
        summary[key] = {"min": min(values), "mean": statistics.fmean(values), "max": max(values),
                        "spread": max(values) - min(values)}
        print(f"{key:18s} min {min(values):7.2f}  mean {statistics.fmean(values):7.2f}  max {max(values):7.2f}")
    if args.json:
        args.json.write_text(json.dumps({"params": params, "runs": runs, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
