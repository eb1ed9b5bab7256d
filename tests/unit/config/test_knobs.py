"""Named knobs map onto settings."""
from __future__ import annotations

import pytest

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings, SequenceBatching
from app.config.knobs import apply_knobs, describe

BASE = ModelSettings(max_batch_size=32, instance_groups=(InstanceGroup(count=1),),
                     dynamic_batching=DynamicBatching(preferred_batch_sizes=(4, 8), max_queue_delay_microseconds=500))


def test_instance_count_and_delay():
    out = apply_knobs(BASE, {"instance_count": 3, "max_queue_delay_microseconds": 100})
    assert out.instance_groups[0].count == 3
    assert out.dynamic_batching.max_queue_delay_microseconds == 100
    assert out.dynamic_batching.preferred_batch_sizes == (4, 8)


def test_enabling_dynamic_batching_replaces_sequence_batching():
    seq = ModelSettings(max_batch_size=8, sequence_batching=SequenceBatching())
    out = apply_knobs(seq, {"dynamic_batching": True, "max_queue_delay_microseconds": 500})
    assert out.sequence_batching is None and out.dynamic_batching.max_queue_delay_microseconds == 500


def test_disabling_dynamic_batching():
    assert apply_knobs(BASE, {"dynamic_batching": False}).dynamic_batching is None


def test_unknown_knob_is_refused():
    with pytest.raises(ValueError, match="unknown knob"):
        apply_knobs(BASE, {"max_queue_delay": 1})


def test_describe():
    assert describe({"max_queue_delay_microseconds": 100}) == "max queue delay µs → 100"


def test_summarize_change_names_the_leaves_that_changed():
    from app.config.knobs import summarize_change

    new = apply_knobs(BASE, {"max_queue_delay_microseconds": 2000, "instance_count": 2})
    text = summarize_change(BASE, new)
    assert "max_queue_delay_us 500→2000" in text and "instance_groups[0].count 1→2" in text
    assert summarize_change(BASE, BASE) == "no change"


def test_summarize_change_names_a_section_switched_on_or_off():
    from app.config.knobs import summarize_change

    seq = ModelSettings(max_batch_size=8, sequence_batching=SequenceBatching())
    new = apply_knobs(seq, {"dynamic_batching": True, "max_queue_delay_microseconds": 500})
    assert summarize_change(seq, new) == "dynamic_batching on, sequence_batching off"
    assert summarize_change(new, seq) == "dynamic_batching off, sequence_batching on"
