"""The third-party repository's decoupled `fanout` (COUNT=n -> n responses ~2 ms apart): a server of it, traffic
classes that send a given COUNT, and a run over the gRPC stream path."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec, TrafficClass
from loadgen.stats import stats_for
from tests.third_party import copy_repository


def start_fanout(base: Path, models: tuple[str, ...] = ("fanout",)) -> EmbeddedServer:
    """Start a server on a copy of the third-party repository, serving `models`; the caller stops it."""
    repo = copy_repository(base / "repository")
    server = EmbeddedServer(ServerOptions(model_repository=repo, models=models, http_port=None, grpc_port=None,
                                          metrics_port=None, log_dir=base))
    server.start()
    return server


def count_class(folder: Path, name: str, count: int, **fields) -> TrafficClass:
    """Return a class that sends COUNT=count to fanout (real data: a perf_analyzer-style JSON file)."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"data": [{"COUNT": [count]}]}))
    return TrafficClass(name, data=str(path), **fields)


def run(endpoint: Endpoint, spec: LoadSpec, **kwargs) -> tuple[list, dict]:
    """Run a spec over the gRPC stream path; return (records, run summary)."""
    records: list = []
    stats = stats_for(spec)
    asyncio.run(LoadRun(spec, endpoint.http_url, [records.extend, stats], grpc_url=endpoint.grpc_url, **kwargs).run())
    return records, stats.summary()
