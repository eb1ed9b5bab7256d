"""Triton Model Analyzer 1.58, the reference tuner: its profile config for a SearchSpace, and the choice it made.

Model Analyzer's brute search (`run_config_search_disable: true` with manual `model_config_parameters`)
measures every combination of the listed knobs at every load. It always measures the model's own config
first, as `<model>_config_default`; 1.58 has no switch to leave it out, so a space without the default
only makes `ma_choice` skip it. Its generated configs are the base config with the listed fields
replaced (dynamic_batching merges field by field, so the base's preferred sizes stay; instance_group is
replaced whole).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import yaml

from app.config.model_config import read_config
from app.config.read import settings_of
from app.experiments.sweep.space import CONCURRENCY, Choice, SearchSpace

RESULTS_CSV = Path("results") / "metrics-model-inference.csv"
DEFAULT_SUFFIX = "_config_default"
LOCALHOST = "127.0.0.1"


def ma_config_yaml(space: SearchSpace, model_repository: str, output_repository: str, export_path: str, *,
                   triton_server_path: str | None = None, perf_analyzer_path: str | None = None,
                   backend_directory: str | None = None, venv_bin: str | None = None,
                   library_path: str | None = None, ports: tuple[int, int, int] = (8000, 8001, 8002),
                   instance_kind: str = "KIND_CPU") -> str:
    """Return the `model-analyzer profile -f` YAML that searches the same space (paths: a local launch here)."""
    config: dict = {
        "model_repository": str(model_repository),
        "output_model_repository_path": str(output_repository),
        "export_path": str(export_path),
        "checkpoint_directory": str(Path(export_path) / "checkpoints"),
        "triton_launch_mode": "local",
        "run_config_search_mode": "brute",
        "run_config_search_disable": True,
        # The server binds to 127.0.0.1 only; "localhost" could resolve to ::1 first.
        "triton_server_flags": {"http-address": LOCALHOST, "grpc-address": LOCALHOST, "metrics-address": LOCALHOST},
        "triton_http_endpoint": f"{LOCALHOST}:{ports[0]}",
        "triton_grpc_endpoint": f"{LOCALHOST}:{ports[1]}",
        "triton_metrics_url": f"http://{LOCALHOST}:{ports[2]}/metrics",
        "profile_models": {space.model: _model_section(space, instance_kind)},
    }
    config.update(_local_launch(export_path, triton_server_path, perf_analyzer_path, venv_bin, library_path))
    if backend_directory:
        if any(c.isspace() for c in str(backend_directory)):
            # Model Analyzer joins the server flags into one string and splits it on whitespace.
            raise ValueError(f"Model Analyzer cannot pass a backend directory with spaces: {backend_directory!r}")
        config["triton_server_flags"]["backend-directory"] = str(backend_directory)
    return _header(space) + yaml.safe_dump(config, sort_keys=False, default_flow_style=None)


def _model_section(space: SearchSpace, instance_kind: str) -> dict:
    params: dict = {}
    if space.max_batch_sizes:
        params["max_batch_size"] = list(space.max_batch_sizes)
    if space.instances:
        params["instance_group"] = [{"kind": instance_kind, "count": list(space.instances)}]
    dynamic: dict = {}
    if space.delays_us:
        dynamic["max_queue_delay_microseconds"] = list(space.delays_us)
    if space.preferred:
        dynamic["preferred_batch_size"] = [list(p) for p in space.preferred]
    if dynamic:
        params["dynamic_batching"] = dynamic
    if not params:
        raise ValueError("the space varies no knob: Model Analyzer's brute search needs at least one")
    constraints: dict = {"perf_latency_p99": {"max": _whole_ms(space.p99_budget_ms)}}
    if space.min_throughput_rps is not None:
        # Model Analyzer takes whole numbers; rounding up keeps its floor no lower than ours.
        constraints["perf_throughput"] = {"min": math.ceil(space.min_throughput_rps)}
    return {
        "cpu_only": True,
        "model_config_parameters": params,
        "parameters": {_load_key(space): _whole_loads(space)},
        "objectives": {"perf_throughput": 10},
        "constraints": constraints,
    }


def _whole_ms(budget_ms: float) -> int:
    # Model Analyzer takes whole milliseconds; rounding down keeps its budget no looser than ours.
    whole = math.floor(budget_ms)
    if whole < 1:
        raise ValueError(f"Model Analyzer takes the p99 budget in whole ms; {budget_ms} ms rounds to 0")
    return whole


def _load_key(space: SearchSpace) -> str:
    return "concurrency" if space.load_kind == CONCURRENCY else "request_rate"


def _whole_loads(space: SearchSpace) -> list[int]:
    if any(v != int(v) for v in space.loads):
        raise ValueError(f"Model Analyzer takes whole {_load_key(space)} values; got {list(space.loads)}")
    return [int(v) for v in space.loads]


def _local_launch(export_path, server, perf_analyzer, venv_bin, library_path) -> dict:
    out: dict = {}
    if server:
        out["triton_server_path"] = str(server)
        out["triton_output_path"] = str(Path(export_path) / "triton.log")
    if perf_analyzer:
        out["perf_analyzer_path"] = str(perf_analyzer)
    env = {}
    if venv_bin:
        # The Python backend stub finds numpy through PATH; Model Analyzer expands $PATH itself.
        env["PATH"] = f"{venv_bin}:$PATH"
    if library_path:
        env["LD_LIBRARY_PATH"] = str(library_path)
    if env:
        out["triton_server_environment"] = env
    return out


def _header(space: SearchSpace) -> str:
    lines = [f"# Model Analyzer 1.58 profile config for {space.model}: {len(space.choices())} configurations x "
             f"{len(space.loads)} loads, p99 <= {space.p99_budget_ms:g} ms.",
             "# Run: model-analyzer profile -f THIS_FILE"]
    if not space.include_default:
        lines.append(f"# Model Analyzer also measures {space.model}{DEFAULT_SUFFIX} (the config as it is); "
                     "this space leaves it out of the choice.")
    return "\n".join(lines) + "\n"


def ma_choice(export_path: Path, output_repository: Path | None = None,
              space: SearchSpace | None = None) -> tuple[Choice | None, dict]:
    """Return the configuration Model Analyzer ranks first under its constraints, and that row's figures.

    The choice sets the knobs the space varies (without a space: those that differ between the measured
    configs), read from the generated config.pbtxt files in the output repository (default:
    export_path/output_model_repository). None when no measurement met the constraints.
    """
    export_path = Path(export_path)
    repo = Path(output_repository) if output_repository else export_path / "output_model_repository"
    rows = _rows(export_path / RESULTS_CSV)
    if space is not None and not space.include_default:
        rows = [r for r in rows if not r["Model Config Path"].endswith(DEFAULT_SUFFIX)]
    if not rows:
        raise ValueError(f"no measurements in {export_path / RESULTS_CSV}")
    top = rows[0]  # Model Analyzer writes its best configuration first, its best measurement first
    figures = _figures(top)
    figures["measurements"] = len(rows)
    if not figures["satisfies"]:
        return None, figures
    knobs = _space_knobs(space) if space is not None else _varied_knobs(repo, {r["Model Config Path"] for r in rows})
    return _choice_of(repo, top["Model Config Path"], knobs), figures


def ma_best_by_choice(export_path: Path, space: SearchSpace,
                      output_repository: Path | None = None) -> dict[str, dict]:
    """Return, per configuration Model Analyzer measured (by Choice key), the figures of its best measurement inside
    the constraints — how Model Analyzer itself rates a configuration another tuner chose. A configuration with none
    inside them is left out."""
    export_path = Path(export_path)
    repo = Path(output_repository) if output_repository else export_path / "output_model_repository"
    knobs = _space_knobs(space)
    best: dict[str, dict] = {}
    for row in _rows(export_path / RESULTS_CSV):
        figures = _figures(row)
        variant = row["Model Config Path"]
        if not figures["satisfies"]:
            continue
        if not variant.endswith(DEFAULT_SUFFIX) and not (repo / variant / "config.pbtxt").is_file():
            continue
        key = _choice_of(repo, variant, knobs).key
        if key not in best or figures["throughput_rps"] > best[key]["throughput_rps"]:
            best[key] = figures
    return best


def _choice_of(repo: Path, variant: str, knobs: list[str]) -> Choice:
    """Return the choice a measured variant is: the default config's empty one, else its generated config's knobs."""
    if variant.endswith(DEFAULT_SUFFIX):
        return Choice()
    values = _values(repo / variant / "config.pbtxt")
    return Choice(**{k: values[k] for k in knobs})


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"no {path}: did Model Analyzer's profile finish?")
    with path.open(newline="") as f:
        return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(f)]


def _figures(row: dict) -> dict:
    load = row.get("Concurrency") or row.get("Request Rate") or ""
    return {
        "variant": row["Model Config Path"],
        "satisfies": row["Satisfies Constraints"] == "Yes",
        "throughput_rps": float(row["Throughput (infer/sec)"]),
        "p99_ms": float(row["p99 Latency (ms)"]),
        "load_kind": "concurrency" if row.get("Concurrency") else "rate",
        "load": float(load) if load else None,
    }


def _values(path: Path) -> dict:
    """Return the knob values of one generated config.pbtxt, under Choice's field names."""
    settings = settings_of(read_config(path))
    dyn = settings.dynamic_batching
    return {
        "instances": sum(g.count for g in settings.instance_groups) if settings.instance_groups else None,
        "max_batch_size": settings.max_batch_size,
        "preferred": dyn.preferred_batch_sizes if dyn else None,
        "delay_us": dyn.max_queue_delay_microseconds if dyn else None,
    }


def _space_knobs(space: SearchSpace) -> list[str]:
    axes = {"instances": space.instances, "max_batch_size": space.max_batch_sizes, "preferred": space.preferred,
            "delay_us": space.delays_us}
    return [name for name, values in axes.items() if values]


def _varied_knobs(repo: Path, variants: set[str]) -> list[str]:
    seen = [_values(repo / v / "config.pbtxt") for v in sorted(variants) if (repo / v / "config.pbtxt").is_file()]
    return [name for name in ("instances", "max_batch_size", "preferred", "delay_us")
            if len({repr(s[name]) for s in seen}) > 1]
