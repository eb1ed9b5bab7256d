"""token_sim's two batchings, measured repeatedly on this machine: python -m bench.token_sim_batchings.

On a fresh embedded server serving token_sim alone, each repetition hot-reloads token_sim into each mode and
runs a closed loop of streaming generations (concurrency 8, lengths uniform 4..64 by default); the figures
are those of the requests that finished in a window after the warm-up (loadgen.generate_stream.stream_figures):
  request   batching=request + dynamic_batching (max_queue_delay_microseconds --delay-us)
  inflight  batching=inflight, no dynamic_batching
The spread over the repetitions is what a scenario's margins are taken from.
"""
from __future__ import annotations

import argparse
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

MODEL = "token_sim"
KEYS = ("tokens_per_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "tpot_p50_ms")


def configure(repo: Path, mode: str, delay_us: int) -> mc.ModelConfig:
    """Return token_sim's shipped config switched to a mode: the batching parameter and the dynamic batcher."""
    config = text_format.Parse((repo / MODEL / "config.pbtxt").read_text(), mc.ModelConfig())
    config.parameters["batching"].string_value = mode
    if mode == "request":
        config.dynamic_batching.max_queue_delay_microseconds = delay_us
    else:
        config.ClearField("dynamic_batching")
    return config


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
                    rows.append({"rep": rep, "mode": mode, **figures})
                    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in rows[-1].items()}),
                          flush=True)
        finally:
            server.stop()
    for mode in ("request", "inflight"):
        mine = [r for r in rows if r["mode"] == mode]
        print(mode, ", ".join(f"{k} {min(r[k] for r in mine):.1f}..{max(r[k] for r in mine):.1f}" for k in KEYS))


if __name__ == "__main__":
    main()
