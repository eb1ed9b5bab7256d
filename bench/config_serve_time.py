"""How soon a changed config serves: python -m bench.config_serve_time [--reps 5] [--json].

Each path on a fresh embedded server on a temporary copy of model_repository/:
  explicit, no auto-complete   a reload of stream_acc over the load API with a changed config (its queue delay, as
                               an Apply sends it) on a server started without Triton's auto-complete (the lab's own
                               models as bundled: repository.completes_nothing)
  explicit, auto-complete      the same on a server that auto-completes (the Python backend's stub sleeps 1 s)
  poll 1 s                     --model-control-mode=poll --repository-poll-secs=1: from writing gpu_sim's
                               config.pbtxt until the served config shows the change, the writes landing at
                               different points of the poll cycle (what a poll-mode Apply waits for)
Printed: min / median / max seconds of each. The tests check what serves, never how soon
(tests/contract/server/test_embedded.py, tests/contract/config/test_poll.py).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import tritonclient.http as http

from app.config.model_config import format_config, read_config, write_text_atomic
from app.config.poll import wait_until_served
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions

POLL = ("--model-control-mode=poll", "--repository-poll-secs=1")  # after the server's own explicit: the last wins


def _server(base: Path, name: str, **options) -> EmbeddedServer:
    repo = Path(shutil.copytree(MODEL_REPOSITORY, base / name, ignore=shutil.ignore_patterns("__pycache__")))
    return EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                        log_dir=base, **options))


def reloads(base: Path, auto_complete: bool, reps: int) -> list[float]:
    """Return the seconds of each reload of stream_acc over the load API, each with another queue delay (a load of
    the config that serves already changes nothing and returns at once)."""
    server = _server(base, f"explicit-{auto_complete}", auto_complete=auto_complete)
    endpoint = server.start()
    try:
        client = http.InferenceServerClient(endpoint.host_port)
        config = client.get_model_config("stream_acc")
        took = []
        for run in range(reps):
            config["sequence_batching"]["oldest"]["max_queue_delay_microseconds"] = 1000 + 10 * (run + 1)
            began = time.perf_counter()
            client.load_model("stream_acc", headers=endpoint.control_headers, config=json.dumps(config))
            took.append(time.perf_counter() - began)
        return took
    finally:
        server.stop()


def poll_writes(base: Path, reps: int) -> list[float]:
    """Return the seconds from writing gpu_sim's config.pbtxt until the server serves it, in poll mode."""
    server = _server(base, "poll", models=(), extra_args=POLL)
    endpoint = server.start()
    path = server.options.model_repository / "gpu_sim" / "config.pbtxt"
    try:
        took = []
        for run in range(reps):
            config = read_config(path)
            want = 1000 + 10 * run
            config.dynamic_batching.max_queue_delay_microseconds = want
            began = time.monotonic()
            write_text_atomic(path, format_config(config))
            wait_until_served(endpoint, "gpu_sim", lambda c, w=want: c.dynamic_batching.max_queue_delay_microseconds
                              == w, 120)
            took.append(time.monotonic() - began)
            time.sleep(0.3 * (run % 4))  # the next write lands elsewhere in the poll cycle
        return took
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbl-config-serve-time-") as tmp:
        base = Path(tmp)
        found = {"explicit, no auto-complete": reloads(base, False, args.reps),
                 "explicit, auto-complete": reloads(base, True, args.reps),
                 "poll 1 s": poll_writes(base, args.reps)}
    if args.json:
        print(json.dumps(found))
        return
    print(f"{'path':28} {'min':>6} {'median':>7} {'max':>6}  (s, {args.reps} each)")
    for path, took in found.items():
        print(f"{path:28} {min(took):6.2f} {statistics.median(took):7.2f} {max(took):6.2f}")


if __name__ == "__main__":
    main()
