"""Settings dataclasses: frozen, coerced, and refusing negative numbers."""
from __future__ import annotations

import dataclasses

import pytest

from app.config import (
    ConfigValidationError, DynamicBatching, InstanceGroup, Kind, ModelSettings, QueuePolicy, SequenceBatching,
    Strategy, TimeoutAction,
)


def test_settings_are_frozen_and_hashable():
    group = InstanceGroup(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        group.count = 3
    assert hash(DynamicBatching(preferred_batch_sizes=[4, 8], priority_queue_policies={1: QueuePolicy()}))


def test_strings_and_lists_are_coerced():
    assert InstanceGroup(1, "KIND_GPU", [0, 1]) == InstanceGroup(1, Kind.GPU, (0, 1))
    assert QueuePolicy("DELAY").timeout_action is TimeoutAction.DELAY
    assert SequenceBatching("direct").strategy is Strategy.DIRECT
    db = DynamicBatching(priority_queue_policies={2: QueuePolicy(), 1: QueuePolicy("DELAY")})
    assert [level for level, _ in db.priority_queue_policies] == [1, 2]
    assert ModelSettings(parameters={"b": 2, "a": "1"}).parameters == (("a", "1"), ("b", "2"))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: InstanceGroup(count=-1), "instance_group.count"),
        (lambda: InstanceGroup(gpus=(0, -1)), "instance_group.gpus"),
        (lambda: DynamicBatching(max_queue_delay_microseconds=-5), "dynamic_batching.max_queue_delay_microseconds"),
        (lambda: DynamicBatching(preferred_batch_sizes=(-4,)), "dynamic_batching.preferred_batch_size"),
        (lambda: DynamicBatching(priority_queue_policies={-1: QueuePolicy()}),
         "dynamic_batching.priority_queue_policy"),
        (lambda: QueuePolicy(max_queue_size=-1), "queue_policy.max_queue_size"),
        (lambda: SequenceBatching(max_sequence_idle_microseconds=-1),
         "sequence_batching.max_sequence_idle_microseconds"),
        (lambda: ModelSettings(max_batch_size=-1), "max_batch_size"),
    ],
)
def test_negative_values_are_refused_with_the_field(build, field):
    with pytest.raises(ConfigValidationError) as info:
        build()
    assert info.value.field.startswith(field)
    assert "positive" in str(info.value)


def test_unknown_enum_names_fail_loudly():
    with pytest.raises(ValueError, match="KIND_TPU"):
        InstanceGroup(kind="KIND_TPU")
