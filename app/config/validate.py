"""Check a ModelConfig against plain rules and the server's caps before anything touches the server."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as pb

from app.config.caps import ServerCaps
from app.config.errors import ConfigValidationError, Problem
from app.config.model_config import ModelConfig
from app.server.repository import ModelNameError, model_dir


@dataclass(frozen=True)
class Limits:
    """Values past these are taken for typos, not intentions."""

    max_batch_size: int = 4096
    max_instances: int = 64
    max_queue_delay_us: int = 10_000_000
    max_priority_levels: int = 64
    max_timeout_us: int = 3_600_000_000
    max_sequence_idle_us: int = 3_600_000_000


def problems(config: ModelConfig, caps: ServerCaps, limits: Limits = Limits()) -> list[Problem]:
    """Return every problem found in config, in field order; empty when it is fine."""
    return [
        *_name(config, caps),
        *_max_batch_size(config, limits),
        *_instances(config, caps, limits),
        *_dynamic(config, limits),
        *_sequence(config, limits),
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
        yield Problem("dynamic_batching", "is set together with sequence_batching; keep one: disable "
                      "dynamic batching for a stateful model, sequence batching for a stateless one")
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


def _sequence(config: ModelConfig, limits: Limits) -> Iterator[Problem]:
    if not config.HasField("sequence_batching"):
        return
    sb = config.sequence_batching
    yield from _delay("sequence_batching.max_sequence_idle_microseconds", sb.max_sequence_idle_microseconds,
                      limits.max_sequence_idle_us)
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
