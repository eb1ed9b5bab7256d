"""Helpers for tests against the session's real tritonserver: config overrides, runs, stats."""
from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2 as mc

from loadgen.run import LoadRun
from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import LoadSpec, TrafficClass
from loadgen.stats import stats_for

BENCH_MODELS = Path(__file__).resolve().parents[3] / "bench" / "models"


def reload_with(triton, model: str, edit: Callable[[mc.ModelConfig], None]) -> None:
    """Reload a model with its repository config changed by edit (a config override, file untouched)."""
    import tritonclient.http as http  # noqa: PLC0415

    config = mc.ModelConfig()
    text_format.Parse((triton.repo / model / "config.pbtxt").read_text(), config)
    edit(config)
    http.InferenceServerClient(triton.endpoint.host_port).load_model(model, headers=triton.endpoint.control_headers,
                                                                  config=json_format.MessageToJson(config))


def add_bench_model(triton, model: str = "identity") -> None:
    """Copy a bench model into the session's repository and load it."""
    import tritonclient.http as http  # noqa: PLC0415

    if not (triton.repo / model).exists():
        shutil.copytree(BENCH_MODELS / model, triton.repo / model)
    http.InferenceServerClient(triton.endpoint.host_port).load_model(model, headers=triton.endpoint.control_headers)


def remove_bench_model(triton, model: str = "identity") -> None:
    """Unload a bench model and take it out of the session's repository."""
    import tritonclient.http as http  # noqa: PLC0415

    http.InferenceServerClient(triton.endpoint.host_port).unload_model(model, headers=triton.endpoint.control_headers)
    shutil.rmtree(triton.repo / model, ignore_errors=True)


def run_load(triton, spec: LoadSpec) -> tuple[list, dict, LoadRun]:
    """Run a spec against the session server; return (records, summary, run)."""
    records: list = []
    stats = stats_for(spec)
    run = LoadRun(spec, triton.url, [records.extend, stats])
    asyncio.run(run.run())
    return records, stats.summary(), run


def model_stats(triton, model: str) -> dict:
    """Return the model's inference statistics from /v2/models/MODEL/stats."""
    with urllib.request.urlopen(f"{triton.url}/v2/models/{model}/stats", timeout=5) as resp:
        return json.loads(resp.read())["model_stats"][0]


def identity_spec(**kw) -> LoadSpec:
    """A load of the bench model `identity` (16 floats a request; the `identity` fixture serves it)."""
    return LoadSpec(model="identity", classes=(TrafficClass("c", shape=ShapeSpec(dims=(16,))),), **kw)
