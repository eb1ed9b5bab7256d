"""Reading settings out of configs, and writing them back."""
from __future__ import annotations

import pytest

from app.config import (
    DynamicBatching, InstanceGroup, Kind, SequenceBatching, Strategy, format_config, read_config, set_settings,
    settings_of,
)
from app.paths import MODEL_REPOSITORY
from tests.config.conftest import SHIPPED, pristine, shipped_id


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
