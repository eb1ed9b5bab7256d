"""Run the embedded tritonserver in the foreground: python -m app.server [--http-port N ...]."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from app.paths import MODEL_REPOSITORY
from app.server.control_key import HEADER, VARIABLE
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.start_errors import ServerStartError
from app.server.repository import model_names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.server", description=__doc__)
    parser.add_argument("--model-repository", type=Path, default=MODEL_REPOSITORY)
    parser.add_argument("--http-port", type=int, default=8000, help="preferred; a free one is used when taken")
    parser.add_argument("--grpc-port", type=int, default=8001)
    parser.add_argument("--metrics-port", type=int, default=8002)
    parser.add_argument("--models", help="comma-separated models to load (default: all)")
    args = parser.parse_args(argv)
    repo = args.model_repository.resolve()
    models = tuple(m for m in (args.models or "").split(",") if m) or tuple(model_names(repo))
    key = os.environ.get(VARIABLE, "").strip() or None  # a dashboard on TRITON_URL sets the same key
    server = EmbeddedServer(ServerOptions(repo, args.http_port, args.grpc_port, args.metrics_port, models=models,
                                          control_key=key))
    try:
        ep = server.start()
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while it starts: nothing left running
        server.stop()
        return 130
    # the handlers before the banner: a Ctrl-C right after "Ctrl-C to stop." must stop the server, not kill this
    # process with its server left running (a test's SIGINT beside stress-ng landed in between and exited with -2)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(f"tritonserver ready (models: {', '.join(models)})")
    print(f"  HTTP     {ep.http_url}   (ready: {ep.http_url}/v2/health/ready)")
    print(f"  gRPC     {ep.grpc_url}")
    print(f"  metrics  {ep.metrics_url}")
    print(f"  log      {server.log_path}")
    print(f"  load, unload and the repository index need the header {HEADER}: "
          + (f"the value of {VARIABLE}" if key else f"a random key (set {VARIABLE} before starting to choose it)"))
    print("Ctrl-C to stop.", flush=True)
    while not done.wait(1.0):
        if not server.running():
            print(f"tritonserver exited unexpectedly; log tail:\n{server.log_tail()}", file=sys.stderr)
            return 1
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
