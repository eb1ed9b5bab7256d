"""Traffic forms map onto load specs."""
from __future__ import annotations

import bisect
from random import Random

import pytest

from app.traffic import TrafficForm, build_spec, class_targets, form_from_spec, keep_up_warning, problems
from loadgen.arrivals import poisson
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


def test_a_generator_that_falls_behind_its_schedule_is_named():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=5000))
    slow = {"all": {"seconds": 10, "requests": 10_000, "late": 9_500, "behind": 9_000}}
    assert "not keeping up: 90% of requests went out more than 10 ms after their slot over the last 10 s" in (
        keep_up_warning(spec, slow) or "")
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 49_800, "behind": 100}}) is None  # 0.2 %
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 49_800, "behind": 5_000}})  # 10 %
    jitter = {"all": {"seconds": 10, "requests": 3_600, "late": 440, "behind": 0}}  # 12 % a few ms late: a busy CPU
    assert keep_up_warning(spec, jitter) is None
    assert keep_up_warning(spec, {"all": {"seconds": 2, "requests": 10, "behind": 9}}) is None  # too short to judge
    assert keep_up_warning(spec, {"all": {"seconds": 10, "requests": 10, "behind": 5}}) is None  # too few to judge
    assert keep_up_warning(build_spec(TrafficForm(model="gpu_sim")), slow) is None  # closed loop sends when ready


def test_fewer_sends_than_the_mean_rate_on_time_is_not_a_generator_falling_behind():
    """A Poisson stream sends under 95 % of its mean in many 10 s windows, and an overloaded server leaves the
    last seconds' sends unanswered (not yet counted): neither is the generator's fault when nothing went late."""
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=20))
    gaps, t, sends = poisson(20.0, Random(7)), 0.0, []
    while t < 2_000:
        t += next(gaps)
        sends.append(t)
    counts = [bisect.bisect(sends, w + 10) - bisect.bisect(sends, w) for w in range(0, 1_990, 10)]
    short = [c for c in counts if c < 0.95 * 20 * 10]
    assert len(short) > 0.1 * len(counts), f"the test's premise: {len(short)} of {len(counts)} windows short"
    warned = [c for c in short if keep_up_warning(spec, {"all": {"seconds": 10, "requests": c, "behind": 0}})]
    assert not warned, f"{len(warned)} on-time windows called the generator slow, e.g. {warned[:5]} of 200 sent"
    overloaded = {"all": {"seconds": 10, "requests": 1_200, "late": 30, "behind": 6}}  # 2,000 asked
    assert keep_up_warning(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=200)), overloaded) is None
