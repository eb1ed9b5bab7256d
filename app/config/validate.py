"""Check a ModelConfig against plain rules and the server's caps before anything touches the server."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as pb

from app.config.caps import ServerCaps
from app.config.enums import enum_problems
from app.config.errors import ConfigValidationError, Problem
from app.config.model_config import ModelConfig
from app.server.repository import ModelNameError, model_dir
from app.config.settings import BOTH_SCHEDULERS


@dataclass(frozen=True)
class Limits:
    """Values past these are taken for typos, not intentions."""

    max_batch_size: int = 4096
    max_instances: int = 64
    max_queue_delay_us: int = 10_000_000
    max_priority_levels: int = 64
    max_timeout_us: int = 3_600_000_000
    max_sequence_idle_us: int = 3_600_000_000
    max_total_instances: int = 64  # across groups, as for one group: each is a process to start and stop
    min_reject_timeout_us: int = 1000  # a REJECT timeout below this rejects requests before any batch forms
    min_sequence_idle_us: int = 100_000  # below this a sequence expires between its own steps
    max_warmups: int = 8
    max_warmup_count: int = 100
    max_parameters: int = 64
    max_parameter_chars: int = 4096


def problems(config: ModelConfig, caps: ServerCaps, limits: Limits = Limits()) -> list[Problem]:
    """Return every problem found in config, in field order; empty when it is fine."""
    folder = _folder(config, caps)
    return [
        *_name(config, caps),
        *enum_problems(config),
        *_max_batch_size(config, limits),
        *_instances(config, caps, limits),
        *_dynamic(config, limits),
        *_sequence(config, limits),
        *_warmup(config, limits),
        *_parameters(config, limits, folder),
        *_paths(config, folder),
    ]


def validate(config: ModelConfig, caps: ServerCaps, limits: Limits = Limits()) -> None:
    """Raise ConfigValidationError listing every problem in config; return None when it is fine."""
    found = problems(config, caps, limits)
    if found:
        raise ConfigValidationError.of(found)


def _name(config: ModelConfig, caps: ServerCaps) -> Iterator[Problem]:
    name = config.name
    known = ", ".join(sorted(caps.model_names)) or "none"
    if not name:
        yield Problem("name", f"is empty; set it to the model's folder name (one of: {known})")
    elif caps.repo is not None:
        try:
            model_dir(caps.repo, name)
        except ModelNameError as exc:
            yield Problem("name", f"{exc}; use one of: {known}")
    elif "/" in name or "\\" in name or name in (".", ".."):
        yield Problem("name", f"{name!r} is a path; use a model's folder name (one of: {known})")
    elif name not in caps.model_names:
        yield Problem("name", f"model {name!r} is not on the server; use one of: {known}")


def _max_batch_size(config: ModelConfig, limits: Limits) -> Iterator[Problem]:
    mbs = config.max_batch_size
    if mbs < 0:
        yield Problem("max_batch_size", f"is {mbs}; use 0 (no batching) or 1..{limits.max_batch_size}")
    elif mbs > limits.max_batch_size:
        yield Problem("max_batch_size", f"is {mbs}, past {limits.max_batch_size}; lower it")


def _folder(config: ModelConfig, caps: ServerCaps) -> Path | None:
    if caps.repo is None or not config.name:
        return None
    try:
        return model_dir(caps.repo, config.name)
    except ModelNameError:
        return None


def _instances(config: ModelConfig, caps: ServerCaps, limits: Limits) -> Iterator[Problem]:
    gpus_have = caps.gpu_count
    for i, group in enumerate(config.instance_group):
        where = f"instance_group[{i}]"
        if not 1 <= group.count <= limits.max_instances:
            yield Problem(f"{where}.count", f"is {group.count}; use 1..{limits.max_instances} instances")
        if group.kind == pb.ModelInstanceGroup.KIND_GPU and gpus_have == 0:
            yield Problem(f"{where}.kind", "is KIND_GPU but the server has no GPU; use KIND_CPU")
        if group.gpus and group.kind == pb.ModelInstanceGroup.KIND_CPU:
            yield Problem(f"{where}.gpus", f"lists GPUs {list(group.gpus)} on a KIND_CPU group; remove them")
        elif group.gpus and gpus_have == 0:
            yield Problem(f"{where}.gpus", f"lists GPUs {list(group.gpus)} but the server has none; remove them")
        else:
            for gpu in group.gpus:
                if not 0 <= gpu < gpus_have:
                    yield Problem(f"{where}.gpus",
                                  f"GPU {gpu} does not exist; the server has GPUs 0..{gpus_have - 1}")
    total = sum(group.count for group in config.instance_group)
    if len(config.instance_group) > 1 and total > limits.max_total_instances:
        yield Problem("instance_group", f"asks for {total} instances in all, past {limits.max_total_instances}; "
                      "use fewer groups or smaller counts")
    if config.instance_group and all(group.passive for group in config.instance_group):
        yield Problem("instance_group.passive", "is true for every group: no instance would serve a request; "
                      "make at least one group active (passive: false)")


def _preferred(field: str, sizes, mbs: int) -> Iterator[Problem]:
    for size in sizes:
        if size < 1:
            yield Problem(field, f"has {size}; preferred sizes must be 1..max_batch_size ({mbs})")
        elif size > mbs:
            yield Problem(field, f"has {size}, above max_batch_size {mbs}; lower it or raise max_batch_size")


def _delay(field: str, value: int, limit: int) -> Iterator[Problem]:
    if value > limit:
        yield Problem(field, f"is {value} µs ({value / 1e6:g} s), past {limit / 1e6:g} s; lower it")


def _dynamic(config: ModelConfig, limits: Limits) -> Iterator[Problem]:
    if not config.HasField("dynamic_batching"):
        return
    db, mbs = config.dynamic_batching, config.max_batch_size
    if config.HasField("sequence_batching"):
        yield Problem("dynamic_batching", BOTH_SCHEDULERS)
    if mbs == 0:
        yield Problem("dynamic_batching", "needs max_batch_size > 0; raise max_batch_size or disable it")
    yield from _preferred("dynamic_batching.preferred_batch_size", db.preferred_batch_size, mbs)
    yield from _delay("dynamic_batching.max_queue_delay_microseconds", db.max_queue_delay_microseconds,
                      limits.max_queue_delay_us)
    yield from _priorities(db, limits)


def _priorities(db: pb.ModelDynamicBatching, limits: Limits) -> Iterator[Problem]:
    levels, default = db.priority_levels, db.default_priority_level
    if levels > limits.max_priority_levels:
        yield Problem("dynamic_batching.priority_levels", f"is {levels}; use 0..{limits.max_priority_levels}")
    if db.preserve_ordering and levels > 1:
        yield Problem("dynamic_batching.preserve_ordering", f"is on with {levels} priority levels; Triton allows "
                      "one level when preserving order: turn preserve_ordering off or use priority_levels <= 1")
    if levels == 0 and default != 0:
        yield Problem("dynamic_batching.default_priority_level",
                      f"is {default} but priority_levels is 0; set priority_levels >= {default} or the default to 0")
    elif levels > 0 and not 1 <= default <= levels:
        yield Problem("dynamic_batching.default_priority_level", f"is {default}; use 1..{levels} (priority_levels)")
    for level in sorted(db.priority_queue_policy):
        if not 1 <= level <= levels:
            fix = f"use 1..{levels}" if levels else "set priority_levels first"
            yield Problem("dynamic_batching.priority_queue_policy", f"has level {level}; {fix}")
    policies = [("default_queue_policy", db.default_queue_policy)]
    policies += [(f"priority_queue_policy[{k}]", p) for k, p in sorted(db.priority_queue_policy.items())]
    for name, policy in policies:
        timeout = policy.default_timeout_microseconds
        if timeout > limits.max_timeout_us:
            yield Problem(f"dynamic_batching.{name}.default_timeout_microseconds",
                          f"is {timeout} µs, past {limits.max_timeout_us / 1e6:g} s; lower it")
        reject = policy.timeout_action == pb.ModelQueuePolicy.REJECT
        if reject and 0 < timeout < limits.min_reject_timeout_us:
            yield Problem(f"dynamic_batching.{name}.default_timeout_microseconds",
                          f"is {timeout} µs with REJECT: requests would be rejected before any batch forms; "
                          f"use 0 (no timeout) or at least {limits.min_reject_timeout_us} µs")


def _sequence(config: ModelConfig, limits: Limits) -> Iterator[Problem]:
    if not config.HasField("sequence_batching"):
        return
    sb = config.sequence_batching
    yield from _delay("sequence_batching.max_sequence_idle_microseconds", sb.max_sequence_idle_microseconds,
                      limits.max_sequence_idle_us)
    idle = sb.max_sequence_idle_microseconds
    if 0 < idle < limits.min_sequence_idle_us:
        yield Problem("sequence_batching.max_sequence_idle_microseconds",
                      f"is {idle} µs: sequences would expire between their own steps; use 0 (Triton's 1 s default) "
                      f"or at least {limits.min_sequence_idle_us} µs")
    strategy = sb.WhichOneof("strategy_choice") or "direct"
    chosen = getattr(sb, strategy)
    yield from _delay(f"sequence_batching.{strategy}.max_queue_delay_microseconds",
                      chosen.max_queue_delay_microseconds, limits.max_queue_delay_us)
    if strategy == "oldest":
        yield from _preferred("sequence_batching.oldest.preferred_batch_size", sb.oldest.preferred_batch_size,
                              config.max_batch_size)
        if sb.oldest.max_candidate_sequences < 0:
            yield Problem("sequence_batching.oldest.max_candidate_sequences",
                          f"is {sb.oldest.max_candidate_sequences}; use 1 or more")
    inputs = {tensor.name for tensor in config.input}
    for control in sb.control_input:
        if control.name in inputs:
            yield Problem("sequence_batching.control_input",
                          f"{control.name!r} is also a model input; rename the control input")


def _warmup(config: ModelConfig, limits: Limits) -> Iterator[Problem]:
    if len(config.model_warmup) > limits.max_warmups:
        yield Problem("model_warmup", f"has {len(config.model_warmup)} entries, past {limits.max_warmups}; keep a few")
    for i, warm in enumerate(config.model_warmup):
        if not 0 <= warm.count <= limits.max_warmup_count:
            yield Problem(f"model_warmup[{i}].count", f"is {warm.count}: the load would run that many warm-up "
                          f"requests before serving; use 1..{limits.max_warmup_count}")
        if config.max_batch_size and warm.batch_size > config.max_batch_size:
            yield Problem(f"model_warmup[{i}].batch_size", f"is {warm.batch_size}, above max_batch_size "
                          f"{config.max_batch_size}; lower it")


def model_rules(folder: Path | None) -> dict:
    """Return the model's own rules for its parameters (its folder's lab.json), {} when it has none."""
    if folder is None or not (folder / "lab.json").is_file():
        return {}
    try:
        return json.loads((folder / "lab.json").read_text()).get("parameters", {})
    except (OSError, ValueError):
        return {}


def _parameters(config: ModelConfig, limits: Limits, folder: Path | None) -> Iterator[Problem]:
    params = config.parameters
    if len(params) > limits.max_parameters:
        yield Problem("parameters", f"has {len(params)} entries, past {limits.max_parameters}; remove some")
    for key, value in sorted(params.items()):
        if len(key) > 128 or len(value.string_value) > limits.max_parameter_chars:
            yield Problem(f"parameters[{key[:40]!r}]", f"is longer than {limits.max_parameter_chars} characters; "
                          "shorten it")
    for key, rule in sorted(model_rules(folder).items()):
        if key not in params:
            continue
        text = params[key].string_value
        if "choices" in rule:
            if text not in rule["choices"]:
                yield Problem(f"parameters[{key!r}]", f"is {text!r}; use one of {', '.join(rule['choices'])}")
            continue
        try:
            value = float(text)
        except ValueError:
            yield Problem(f"parameters[{key!r}]", f"is {text[:40]!r}, not a number; {rule.get('what', 'use a number')}")
            continue
        low, high = rule.get("min", -math.inf), rule.get("max", math.inf)
        if not (math.isfinite(value) and low <= value <= high):
            yield Problem(f"parameters[{key!r}]", f"is {text[:40]}; the model takes {low:g}..{high:g} "
                          f"({rule.get('what', key)})")


def _paths(config: ModelConfig, folder: Path | None) -> Iterator[Problem]:
    """Every path-valued field must stay inside the model's folder: no other model's code, no outside library."""
    names = [("default_model_filename", config.default_model_filename), ("runtime", config.runtime)]
    names += [(f"cc_model_filenames[{k!r}]", v) for k, v in sorted(config.cc_model_filenames.items())]
    for i, warm in enumerate(config.model_warmup):
        names += [(f"model_warmup[{i}].inputs[{k!r}].input_data_file", v.input_data_file)
                  for k, v in sorted(warm.inputs.items())]
    for field, value in names:  # file names Triton looks up inside the model (or version) folder
        if value and (value in (".", "..") or any(c in value for c in "/\\") or value.startswith("~")):
            yield Problem(field, f"is {value[:80]!r}, a path; name a file inside the model's folder (no '/' or '..')")
    paths = [(f"model_operations.op_library_filename[{i}]", v)
             for i, v in enumerate(config.model_operations.op_library_filename)]
    if "EXECUTION_ENV_PATH" in config.parameters:
        paths.append(("parameters['EXECUTION_ENV_PATH']", config.parameters["EXECUTION_ENV_PATH"].string_value))
    for field, value in paths:
        if not _inside(value, folder):
            yield Problem(field, f"is {value[:80]!r}, outside the model's folder; put the file inside "
                          f"{folder or 'the model folder'} and name it relative to it")


def _inside(value: str, folder: Path | None) -> bool:
    text = value.replace("$$TRITON_MODEL_DIRECTORY", str(folder) if folder else "")
    if folder is None:
        return not text.startswith(("/", "~")) and ".." not in Path(text).parts
    path = Path(text) if Path(text).is_absolute() else folder / text
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True
