"""Pure edits: each takes a ModelConfig and returns a new one, never touching its input."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from tritonclient.grpc import model_config_pb2 as pb

from app.config.model_config import ModelConfig, copy_config
from app.config.read import settings_of
from app.config.settings import (
    DynamicBatching, InstanceGroup, ModelSettings, QueuePolicy, SequenceBatching, Strategy,
)


def set_max_batch_size(config: ModelConfig, max_batch_size: int) -> ModelConfig:
    """Return a copy with max_batch_size set (0 turns batching off; input dims are left alone)."""
    new = copy_config(config)
    new.max_batch_size = max_batch_size
    return new


def set_instance_groups(config: ModelConfig, groups: Iterable[InstanceGroup]) -> ModelConfig:
    """Return a copy whose instance groups are groups: a group that exists keeps its other fields (name, profile,
    rate limiter, ...), only count, kind and GPUs are set; extra groups are added, missing ones removed."""
    new = copy_config(config)
    groups = list(groups)
    del new.instance_group[len(groups):]
    for i, group in enumerate(groups):
        target = new.instance_group[i] if i < len(new.instance_group) else new.instance_group.add()
        target.count = group.count
        target.kind = pb.ModelInstanceGroup.Kind.Value(group.kind.value)
        if list(target.gpus) != list(group.gpus):
            del target.gpus[:]
            target.gpus.extend(group.gpus)
    return new


def set_instance_group(config: ModelConfig, group: InstanceGroup) -> ModelConfig:
    """Return a copy with exactly one instance group."""
    return set_instance_groups(config, (group,))


def _fill_policy(target: pb.ModelQueuePolicy, policy: QueuePolicy) -> None:
    target.timeout_action = pb.ModelQueuePolicy.TimeoutAction.Value(policy.timeout_action.value)
    target.default_timeout_microseconds = policy.default_timeout_microseconds
    target.allow_timeout_override = policy.allow_timeout_override
    target.max_queue_size = policy.max_queue_size


def set_dynamic_batching(config: ModelConfig, settings: DynamicBatching) -> ModelConfig:
    """Return a copy whose dynamic_batching is exactly settings (this drops sequence_batching: a oneof)."""
    new = copy_config(config)
    new.ClearField("dynamic_batching")
    db = new.dynamic_batching
    db.SetInParent()  # an empty dynamic_batching {} still means "on"
    db.preferred_batch_size.extend(settings.preferred_batch_sizes)
    db.max_queue_delay_microseconds = settings.max_queue_delay_microseconds
    db.preserve_ordering = settings.preserve_ordering
    db.priority_levels = settings.priority_levels
    db.default_priority_level = settings.default_priority_level
    if settings.default_queue_policy is not None:
        _fill_policy(db.default_queue_policy, settings.default_queue_policy)
    for level, policy in settings.priority_queue_policies:
        _fill_policy(db.priority_queue_policy[level], policy)
    return new


def disable_dynamic_batching(config: ModelConfig) -> ModelConfig:
    """Return a copy without dynamic_batching."""
    new = copy_config(config)
    new.ClearField("dynamic_batching")
    return new


def set_sequence_batching(config: ModelConfig, settings: SequenceBatching) -> ModelConfig:
    """Return a copy with sequence batching set, keeping its control inputs; drops dynamic_batching (a oneof)."""
    new = copy_config(config)
    sb = new.sequence_batching
    sb.SetInParent()
    sb.max_sequence_idle_microseconds = settings.max_sequence_idle_microseconds
    if settings.strategy is Strategy.DIRECT:
        had = sb.WhichOneof("strategy_choice") == "direct"
        sb.ClearField("direct")
        if had or settings.max_queue_delay_microseconds:  # no strategy written means direct: do not add one
            sb.direct.SetInParent()
            sb.direct.max_queue_delay_microseconds = settings.max_queue_delay_microseconds
    else:
        sb.ClearField("oldest")
        sb.oldest.SetInParent()
        sb.oldest.max_candidate_sequences = settings.max_candidate_sequences
        sb.oldest.preferred_batch_size.extend(settings.preferred_batch_sizes)
        sb.oldest.max_queue_delay_microseconds = settings.max_queue_delay_microseconds
    return new


def disable_sequence_batching(config: ModelConfig) -> ModelConfig:
    """Return a copy without sequence_batching (its control inputs go too)."""
    new = copy_config(config)
    new.ClearField("sequence_batching")
    return new


def set_parameters(config: ModelConfig, values: Mapping[str, object]) -> ModelConfig:
    """Return a copy with string parameters merged in; a None value removes that key."""
    new = copy_config(config)
    for key, value in values.items():
        if value is None:
            if key in new.parameters:
                del new.parameters[key]
        else:
            new.parameters[key].string_value = str(value)
    return new


def set_settings(config: ModelConfig, settings: ModelSettings) -> ModelConfig:
    """Return a copy carrying every tunable in settings (the inverse of settings_of); only the parts that differ
    from the config's own settings are touched, so settings_of(config) gives back an equal config."""
    old = settings_of(config)
    new = copy_config(config)
    if settings.max_batch_size != old.max_batch_size:
        new = set_max_batch_size(new, settings.max_batch_size)
    if settings.instance_groups != old.instance_groups:
        new = set_instance_groups(new, settings.instance_groups)
    schedulers = (settings.dynamic_batching, settings.sequence_batching)
    if schedulers != (old.dynamic_batching, old.sequence_batching):
        if settings.dynamic_batching:
            new = set_dynamic_batching(new, settings.dynamic_batching)
        elif settings.sequence_batching:
            new = set_sequence_batching(disable_dynamic_batching(new), settings.sequence_batching)
        else:
            new = disable_sequence_batching(disable_dynamic_batching(new))
    if settings.parameters != old.parameters:
        new.ClearField("parameters")
        new = set_parameters(new, dict(settings.parameters))
    return new
