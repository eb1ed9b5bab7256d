"""The tunable parts of a model config as frozen dataclasses, the currency of edits and widgets."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum

from app.config.errors import ConfigValidationError

# THE rule that the two schedulers exclude each other (Triton's scheduling_choice is a oneof), in the words every
# refusal uses: ModelSettings, validate.problems, a config JSON the server would refuse (model_config)
BOTH_SCHEDULERS = ("is set together with sequence_batching; keep one: sequence batching for a stateful model, dynamic "
                   "batching for a stateless one")


class Kind(str, Enum):
    """Where an instance group runs (names are Triton's)."""

    CPU = "KIND_CPU"
    GPU = "KIND_GPU"
    AUTO = "KIND_AUTO"
    MODEL = "KIND_MODEL"


class TimeoutAction(str, Enum):
    """What the queue does with a request whose timeout expired."""

    REJECT = "REJECT"
    DELAY = "DELAY"


class Strategy(str, Enum):
    """How the sequence batcher assigns sequences to batch slots."""

    DIRECT = "direct"
    OLDEST = "oldest"


def _check_counts(obj: object, prefix: str) -> None:
    """Refuse negative integers: protobuf would fail later with a less helpful message."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        values = value if isinstance(value, tuple) and all(isinstance(v, int) for v in value) else (value,)
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and v < 0:
                name = f"{prefix}.{f.name}" if prefix else f.name
                raise ConfigValidationError(name, f"is {v}; use 0 or a positive number")


def _freeze(obj: object, name: str, convert) -> None:
    object.__setattr__(obj, name, convert(getattr(obj, name)))


@dataclass(frozen=True)
class InstanceGroup:
    """instance_group: how many copies of the model run, and on what."""

    count: int = 1
    kind: Kind = Kind.CPU
    gpus: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "kind", Kind)
        _freeze(self, "gpus", tuple)
        _check_counts(self, "instance_group")


@dataclass(frozen=True)
class QueuePolicy:
    """A queue policy: timeout, its action, and a queue bound (0 = unbounded)."""

    timeout_action: TimeoutAction = TimeoutAction.REJECT
    default_timeout_microseconds: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = 0

    def __post_init__(self) -> None:
        _freeze(self, "timeout_action", TimeoutAction)
        _check_counts(self, "queue_policy")


@dataclass(frozen=True)
class DynamicBatching:
    """dynamic_batching: preferred sizes, delay, ordering, priorities and queue policies."""

    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_microseconds: int = 0
    preserve_ordering: bool = False
    priority_levels: int = 0
    default_priority_level: int = 0
    default_queue_policy: QueuePolicy | None = None
    priority_queue_policies: tuple[tuple[int, QueuePolicy], ...] = field(default=())

    def __post_init__(self) -> None:
        _freeze(self, "preferred_batch_sizes", tuple)
        policies = self.priority_queue_policies
        items = policies.items() if isinstance(policies, Mapping) else policies
        _freeze(self, "priority_queue_policies", lambda _: tuple(sorted((int(k), v) for k, v in items)))
        _check_counts(self, "dynamic_batching")
        for level, _policy in self.priority_queue_policies:
            if level < 0:
                raise ConfigValidationError("dynamic_batching.priority_queue_policy",
                                            f"key {level} is negative; use a positive level 1..priority_levels")


@dataclass(frozen=True)
class SequenceBatching:
    """sequence_batching: strategy, idle timeout and, for oldest, candidates and preferred sizes."""

    strategy: Strategy = Strategy.OLDEST
    max_sequence_idle_microseconds: int = 0
    max_candidate_sequences: int = 0
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_microseconds: int = 0

    def __post_init__(self) -> None:
        _freeze(self, "strategy", Strategy)
        _freeze(self, "preferred_batch_sizes", tuple)
        _check_counts(self, "sequence_batching")


@dataclass(frozen=True)
class ModelSettings:
    """Everything the UI tunes on one model, read from or written into a ModelConfig."""

    max_batch_size: int = 0
    instance_groups: tuple[InstanceGroup, ...] = ()
    dynamic_batching: DynamicBatching | None = None
    sequence_batching: SequenceBatching | None = None
    parameters: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "instance_groups", tuple)
        params = self.parameters
        items = params.items() if isinstance(params, Mapping) else params
        _freeze(self, "parameters", lambda _: tuple(sorted((str(k), str(v)) for k, v in items)))
        _check_counts(self, "")
        if self.dynamic_batching is not None and self.sequence_batching is not None:
            raise ConfigValidationError("dynamic_batching", BOTH_SCHEDULERS)
