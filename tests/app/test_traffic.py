"""Traffic forms map onto load specs."""
from __future__ import annotations

import pytest

from app.traffic import TrafficForm, build_spec, form_from_spec, problems
from loadgen.spec import Mode, RetryKind


def test_one_class_closed_loop():
    spec = build_spec(TrafficForm(model="gpu_sim", concurrency=12))
    assert spec.mode is Mode.CLOSED and spec.concurrency == 12 and spec.model == "gpu_sim"
    assert [c.name for c in spec.classes] == ["default"]


def test_interactive_and_batch_get_priorities_and_shares():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=300, arrival="bursty", mix="interactive + batch",
                                  interactive_share=0.25, retry="backoff"))
    inter, batch = spec.classes
    assert (inter.priority, batch.priority) == (1, 2)
    assert (inter.share, batch.share) == (0.25, 0.75)
    assert inter.retry.kind is RetryKind.BACKOFF and spec.arrival.kind == "bursty" and spec.rate == 300


def test_sequences_replace_classes():
    spec = build_spec(TrafficForm(model="stream_acc", sequences=6, sequence_length=12))
    assert spec.classes == () and spec.sequences[0].count == 6 and spec.sequences[0].model == "stream_acc"


def test_a_typed_value_outside_its_range_is_refused_by_name():
    form = TrafficForm(model="gpu_sim", mode="open", rate=50000.0)
    assert problems(form) == ["rate (req/s) must be between 1 and 5000; 50000.0 was typed"]
    with pytest.raises(ValueError, match="rate"):
        build_spec(form)
    assert problems(TrafficForm(model="gpu_sim", concurrency=0))[0].startswith("concurrency must be between 1")


@pytest.mark.parametrize("form", [
    TrafficForm(model="gpu_sim", concurrency=24, timeout_ms=800.0, sla_ms=40.0, duration_s=60.0),
    TrafficForm(model="gpu_sim", mode="open", rate=450.0, arrival="mmpp", mix="interactive + batch",
                interactive_share=0.2, retry="backoff"),
    TrafficForm(model="stream_acc", sequences=5, sequence_length=7, duration_s=30.0),
])
def test_the_panel_redraws_a_running_spec_as_the_form_that_started_it(form):
    assert form_from_spec(build_spec(form), TrafficForm(model="other")) == form
