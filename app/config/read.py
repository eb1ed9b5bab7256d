"""Read the tunable settings out of a ModelConfig, so widgets can start from what is there."""
from __future__ import annotations

from tritonclient.grpc import model_config_pb2 as pb

from app.config.enums import enum_name
from app.config.model_config import ModelConfig
from app.config.settings import (
    DynamicBatching, InstanceGroup, Kind, ModelSettings, QueuePolicy, SequenceBatching, Strategy,
    TimeoutAction,
)


def instance_groups_of(config: ModelConfig) -> tuple[InstanceGroup, ...]:
    """Return the instance groups (Triton's default is one KIND_AUTO group when none is listed)."""
    kinds = pb.ModelInstanceGroup.Kind.DESCRIPTOR
    return tuple(
        InstanceGroup(
            count=group.count,
            kind=Kind(enum_name(kinds, group.kind, f"instance_group[{i}].kind")),
            gpus=tuple(group.gpus),
        )
        for i, group in enumerate(config.instance_group)
    )


def _policy(policy: pb.ModelQueuePolicy, field: str) -> QueuePolicy:
    actions = pb.ModelQueuePolicy.TimeoutAction.DESCRIPTOR
    return QueuePolicy(
        timeout_action=TimeoutAction(enum_name(actions, policy.timeout_action, f"{field}.timeout_action")),
        default_timeout_microseconds=policy.default_timeout_microseconds,
        allow_timeout_override=policy.allow_timeout_override,
        max_queue_size=policy.max_queue_size,
    )


def dynamic_batching_of(config: ModelConfig) -> DynamicBatching | None:
    """Return the dynamic batching settings, or None when it is off."""
    if not config.HasField("dynamic_batching"):
        return None
    db = config.dynamic_batching
    return DynamicBatching(
        preferred_batch_sizes=tuple(db.preferred_batch_size),
        max_queue_delay_microseconds=db.max_queue_delay_microseconds,
        preserve_ordering=db.preserve_ordering,
        priority_levels=db.priority_levels,
        default_priority_level=db.default_priority_level,
        default_queue_policy=(_policy(db.default_queue_policy, "dynamic_batching.default_queue_policy")
                              if db.HasField("default_queue_policy") else None),
        priority_queue_policies={level: _policy(p, f"dynamic_batching.priority_queue_policy[{level}]")
                                 for level, p in db.priority_queue_policy.items()},
    )


def sequence_batching_of(config: ModelConfig) -> SequenceBatching | None:
    """Return the sequence batching settings, or None when it is off."""
    if not config.HasField("sequence_batching"):
        return None
    sb = config.sequence_batching
    if sb.WhichOneof("strategy_choice") == "oldest":
        return SequenceBatching(
            strategy=Strategy.OLDEST,
            max_sequence_idle_microseconds=sb.max_sequence_idle_microseconds,
            max_candidate_sequences=sb.oldest.max_candidate_sequences,
            preferred_batch_sizes=tuple(sb.oldest.preferred_batch_size),
            max_queue_delay_microseconds=sb.oldest.max_queue_delay_microseconds,
        )
    # Triton treats a sequence_batching without a strategy as direct.
    return SequenceBatching(
        strategy=Strategy.DIRECT,
        max_sequence_idle_microseconds=sb.max_sequence_idle_microseconds,
        max_queue_delay_microseconds=sb.direct.max_queue_delay_microseconds,
    )


def parameters_of(config: ModelConfig) -> dict[str, str]:
    """Return the string parameters (the gpu_sim cost model lives here), sorted by key."""
    return {key: config.parameters[key].string_value for key in sorted(config.parameters)}


def settings_of(config: ModelConfig) -> ModelSettings:
    """Return every tunable of a config in one frozen value."""
    return ModelSettings(
        max_batch_size=config.max_batch_size,
        instance_groups=instance_groups_of(config),
        dynamic_batching=dynamic_batching_of(config),
        sequence_batching=sequence_batching_of(config),
        parameters=parameters_of(config),
    )
