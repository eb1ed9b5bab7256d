"""token_sim's two batchings, measured repeatedly on this machine: python -m bench.token_sim_batchings.

On a fresh embedded server serving token_sim alone, each repetition hot-reloads token_sim into each mode and
runs a closed loop of streaming generations (concurrency 8, lengths uniform 4..64 by default); the figures
are those of the requests that finished in a window after the warm-up (loadgen.generate_stream.stream_figures):
  request   batching=request + dynamic_batching (max_queue_delay_microseconds --delay-us)
  inflight  batching=inflight, no dynamic_batching
Then the same load over the load generator's gRPC stream path (loadgen.triton_grpc), whose whole-run medians of the
time to the first response and between responses (grpc_first_p50_ms, grpc_gap_p50_ms) stand beside the SSE client's
ttft_p50_ms and tpot_p50_ms: two clients timing one server's tokens.
The spread over the repetitions is what a scenario's margins are taken from.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as mc

from app.paths import MODEL_REPOSITORY
from app.server.control import ModelControl
from app.server.embedded import EmbeddedServer, ServerOptions
from loadgen.inputs.shapes import LengthSpec
from loadgen.generate_stream import StreamRunner, StreamSpec, stream_figures
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec, TrafficClass
from loadgen.stats import stats_for

MODEL = "token_sim"
KEYS = ("tokens_per_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "tpot_p50_ms",
        "grpc_first_p50_ms", "grpc_gap_p50_ms")


def configure(repo: Path, mode: str, delay_us: int) -> mc.ModelConfig:
    """Return token_sim's shipped config switched to a mode: the batching parameter and the dynamic batcher."""
    config = text_format.Parse((repo / MODEL / "config.pbtxt").read_text(), mc.ModelConfig())
    config.parameters["batching"].string_value = mode
    if mode == "request":
        config.dynamic_batching.max_queue_delay_microseconds = delay_us
    else:
        config.ClearField("dynamic_batching")
    return config


def grpc_figures(endpoint, data: Path, concurrency: int, warmup_s: float, window_s: float, seed: int) -> dict:
    """Run a closed loop of generations over the gRPC stream path; return its medians after the warm-up (ms)."""
    spec = LoadSpec(model=MODEL, concurrency=concurrency, duration_s=warmup_s + window_s, warmup_s=warmup_s,
                    classes=(TrafficClass("gen", data=str(data)),), seed=seed)
    stats = stats_for(spec)
    asyncio.run(LoadRun(spec, endpoint.http_url, [stats], grpc_url=endpoint.grpc_url).run())
    row = stats.summary()["all"]
    return {"grpc_first_p50_ms": row["first_p50_ms"], "grpc_gap_p50_ms": row["gap_p50_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--low", type=int, default=4)
    parser.add_argument("--high", type=int, default=64)
    parser.add_argument("--warmup-s", type=float, default=1.0)
    parser.add_argument("--window-s", type=float, default=5.0)
    parser.add_argument("--delay-us", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "model_repository"
        shutil.copytree(MODEL_REPOSITORY / MODEL, repo / MODEL)
        server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None,
                                              metrics_port=None, models=(MODEL,), log_dir=Path(tmp)))
        endpoint = server.start()
        lengths = Path(tmp) / "lengths.json"  # the LENGTHs the gRPC path's requests draw from, as the runner's
        lengths.write_text(json.dumps({"data": [{"LENGTH": [n]} for n in range(args.low, args.high + 1)]}))
        rows = []
        try:
            for rep in range(args.repeat):
                for mode in ("request", "inflight"):
                    config = json_format.MessageToDict(configure(repo, mode, args.delay_us),
                                                       preserving_proto_field_name=True)
                    ModelControl(endpoint).load(MODEL, json.dumps(config), timeout_s=120)  # as the lab's Apply
                    spec = StreamSpec(MODEL, args.concurrency, LengthSpec("uniform", low=args.low, high=args.high),
                                      seed=rep)
                    records = StreamRunner(spec, endpoint.http_url).run_for(args.warmup_s + args.window_s + 0.2)
                    figures = stream_figures(records, args.warmup_s, args.warmup_s + args.window_s)
                    grpc = grpc_figures(endpoint, lengths, args.concurrency, args.warmup_s, args.window_s, rep)
                    rows.append({"rep": rep, "mode": mode, **figures, **grpc})
                    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in rows[-1].items()}),
                          flush=True)
        finally:
            server.stop()
    for mode in ("request", "inflight"):
        mine = [r for r in rows if r["mode"] == mode]
        print(mode, ", ".join(f"{k} {min(r[k] for r in mine):.1f}..{max(r[k] for r in mine):.1f}" for k in KEYS))


if __name__ == "__main__":
    main()
