"""Traffic forms map onto load specs."""
from __future__ import annotations

import pytest

from app.traffic import TrafficForm, build_spec, class_targets, form_from_spec, keep_up_warning, problems
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


def test_targets_split_the_shared_rate_by_share():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=400, mix="interactive + batch",
                                  interactive_share=0.25))
    assert class_targets(spec) == {"interactive": 100.0, "batch": 300.0}
    assert set(class_targets(build_spec(TrafficForm(model="gpu_sim"))).values()) == {None}  # closed loop


def test_a_generator_that_cannot_keep_up_is_named():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=5000))
    slow = {"all": {"seconds": 10, "requests": 10_000, "late": 9_000}}
    assert "not keeping up: 1,000 req/s sent of 5,000" in keep_up_warning(spec, slow)
    on_time = {"all": {"seconds": 10, "requests": 49_800, "late": 100}}
    assert keep_up_warning(spec, on_time) is None
    assert "late" in keep_up_warning(spec, {"all": {"seconds": 10, "requests": 49_800, "late": 5_000}})
    assert keep_up_warning(spec, {"all": {"seconds": 2, "requests": 10, "late": 0}}) is None  # too short to judge
    assert keep_up_warning(build_spec(TrafficForm(model="gpu_sim")), slow) is None  # closed loop sends when ready
