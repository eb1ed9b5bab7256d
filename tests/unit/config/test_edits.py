"""Pure edits return new configs and leave their input alone (tests/contract/config/test_edits.py applies each)."""
from __future__ import annotations

import pytest

from app.config import (
    DynamicBatching, InstanceGroup, Kind, QueuePolicy, SequenceBatching, Strategy, TimeoutAction,
    disable_dynamic_batching, disable_sequence_batching, dynamic_batching_of, format_config, instance_groups_of,
    parameters_of, sequence_batching_of, set_dynamic_batching, set_instance_group, set_instance_groups,
    set_max_batch_size, set_parameters, set_sequence_batching, settings_of,
)
from tests.unit.config.shipped import pristine

PRIORITIES = DynamicBatching(
    preferred_batch_sizes=(2, 16),
    max_queue_delay_microseconds=2000,
    priority_levels=2,
    default_priority_level=2,
    default_queue_policy=QueuePolicy(TimeoutAction.DELAY, 0, True, 0),
    priority_queue_policies={1: QueuePolicy(TimeoutAction.REJECT, 5000, False, 8)},
)
OLDEST = SequenceBatching(Strategy.OLDEST, 2_000_000, max_candidate_sequences=16, preferred_batch_sizes=(2, 4),
                          max_queue_delay_microseconds=500)
DIRECT = SequenceBatching(Strategy.DIRECT, 1_000_000, max_queue_delay_microseconds=100)

# (model, edit, what the server's config must show afterwards)
CASES = {
    "instances": ("gpu_sim", lambda c: set_instance_group(c, InstanceGroup(2, Kind.CPU)),
                  lambda live: instance_groups_of(live) == (InstanceGroup(2, Kind.CPU),)),
    "dynamic_priorities": ("gpu_sim", lambda c: set_dynamic_batching(c, PRIORITIES),
                           lambda live: dynamic_batching_of(live) == PRIORITIES),
    "preserve_ordering": ("gpu_sim", lambda c: set_dynamic_batching(c, DynamicBatching((4,), 100, True)),
                          lambda live: dynamic_batching_of(live).preserve_ordering),
    "dynamic_off": ("gpu_sim", disable_dynamic_batching, lambda live: dynamic_batching_of(live) is None),
    "max_batch_size": ("gpu_sim", lambda c: set_max_batch_size(c, 16), lambda live: live.max_batch_size == 16),
    "cost_parameters": ("gpu_sim", lambda c: set_parameters(c, {"compute_us_batch1": 500, "copy_us_per_kib": None}),
                        lambda live: parameters_of(live)["compute_us_batch1"] == "500"
                        and "copy_us_per_kib" not in parameters_of(live)),
    "sequence_oldest": ("stream_acc", lambda c: set_sequence_batching(c, OLDEST),
                        lambda live: sequence_batching_of(live) == OLDEST
                        and len(live.sequence_batching.control_input) == 4),
    "sequence_direct": ("stream_acc", lambda c: set_sequence_batching(c, DIRECT),
                        lambda live: sequence_batching_of(live) == DIRECT),
    "sequence_off": ("stream_acc", disable_sequence_batching, lambda live: sequence_batching_of(live) is None),
    "mlp_dynamic": ("mlp", lambda c: set_dynamic_batching(c, DynamicBatching((32,), 0)),
                    lambda live: dynamic_batching_of(live) == DynamicBatching((32,), 0)),
}


@pytest.mark.parametrize("case", CASES)
def test_edit_returns_a_new_config_and_leaves_the_input_alone(case):
    model, edit, _ = CASES[case]
    config = pristine(model)
    before = format_config(config)
    new = edit(config)
    assert new is not config
    assert format_config(config) == before
    assert format_config(new) != before


def test_instance_groups_replace_all_groups():
    new = set_instance_groups(pristine("gpu_sim"), [InstanceGroup(1), InstanceGroup(2, Kind.GPU, (0, 1))])
    assert instance_groups_of(new) == (InstanceGroup(1), InstanceGroup(2, Kind.GPU, (0, 1)))


def test_empty_dynamic_batching_still_means_on():
    new = set_dynamic_batching(pristine("gpu_sim"), DynamicBatching())
    assert new.HasField("dynamic_batching")
    assert "dynamic_batching {\n}" in format_config(new)


def test_switching_sequence_strategy_keeps_control_inputs():
    config = pristine("stream_acc")
    direct = set_sequence_batching(config, DIRECT)
    assert direct.sequence_batching.WhichOneof("strategy_choice") == "direct"
    assert direct.sequence_batching.control_input == config.sequence_batching.control_input
    assert sequence_batching_of(set_sequence_batching(direct, OLDEST)) == OLDEST


def test_parameters_merge():
    new = set_parameters(pristine("gpu_sim"), {"launch_overhead_us": 100, "new_knob": "x"})
    params = parameters_of(new)
    assert params["launch_overhead_us"] == "100" and params["new_knob"] == "x"
    assert params["compute_us_batch1"] == "3000"


def test_settings_round_trip_through_edits():
    config = set_dynamic_batching(pristine("gpu_sim"), PRIORITIES)
    assert settings_of(config).dynamic_batching == PRIORITIES
