"""Reading settings out of configs, and writing them back."""
from __future__ import annotations

import pytest

from app.config import (
    ConfigValidationError, DynamicBatching, InstanceGroup, Kind, SequenceBatching, Strategy, format_config,
    read_config, set_settings, settings_of,
)
from app.config.model_config import copy_config
from app.paths import MODEL_REPOSITORY
from tests.unit.config.shipped import SHIPPED, pristine, shipped_id


def test_gpu_sim_settings():
    settings = settings_of(pristine("gpu_sim"))
    assert settings.max_batch_size == 32
    assert settings.instance_groups == (InstanceGroup(1, Kind.CPU),)
    assert settings.dynamic_batching == DynamicBatching((4, 8), max_queue_delay_microseconds=500)
    assert settings.sequence_batching is None
    assert dict(settings.parameters)["compute_us_batch1"] == "3000"


def test_stream_acc_settings():
    settings = settings_of(pristine("stream_acc"))
    assert settings.dynamic_batching is None
    assert settings.sequence_batching == SequenceBatching(
        Strategy.OLDEST, max_sequence_idle_microseconds=5_000_000, max_candidate_sequences=64,
        preferred_batch_sizes=(4, 8), max_queue_delay_microseconds=1000,
    )


def test_gpu_variant_reads_its_gpus():
    config = read_config(MODEL_REPOSITORY / "gpu_sim" / "configs" / "gpu.pbtxt")
    assert settings_of(config).instance_groups == (InstanceGroup(1, Kind.GPU, (0,)),)


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_writing_read_settings_back_changes_nothing(path):
    config = read_config(path)
    assert format_config(set_settings(config, settings_of(config))) == path.read_text()


@pytest.mark.parametrize("edit, field, number", [
    (lambda c: setattr(c.instance_group[0], "kind", 99), "instance_group[0].kind", 99),
    (lambda c: setattr(c.dynamic_batching.default_queue_policy, "timeout_action", 7),
     "dynamic_batching.default_queue_policy.timeout_action", 7),
    (lambda c: c.dynamic_batching.priority_queue_policy[3].__setattr__("timeout_action", 5),
     "dynamic_batching.priority_queue_policy[3].timeout_action", 5),
])
def test_an_enum_number_out_of_range_is_a_validation_error_naming_the_field(edit, field, number):
    config = copy_config(pristine("gpu_sim"))
    edit(config)
    with pytest.raises(ConfigValidationError) as info:  # not the bare ValueError of Enum.Name
        settings_of(config)
    assert info.value.field == field
    assert f"is {number}, which is not a" in str(info.value) and "use one of" in str(info.value)
