"""The twin's load from the lab's own traffic description: classes, priorities, arrivals."""
from __future__ import annotations

import pytest

from app.twin.from_spec import Unmodelled, load_of
from app.twin.load import Arrivals
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode, SequenceSpec, TrafficClass


def test_an_open_loop_keeps_its_rate_classes_and_priorities():
    spec = LoadSpec(mode=Mode.OPEN, rate=300.0, classes=(TrafficClass("interactive", share=0.25, priority=1),
                                                         TrafficClass("batch", share=0.75, priority=2)))
    load = load_of(spec, 20.0)
    assert load.kind == Arrivals.POISSON and load.rate_rps == 300.0 and load.duration_s == 20.0
    assert [(c.name, c.share, c.priority) for c in load.classes] == [("interactive", 0.25, 1), ("batch", 0.75, 2)]


def test_a_closed_loop_is_its_concurrency_and_a_rate_or_concurrency_given_wins():
    spec = LoadSpec(mode=Mode.CLOSED, concurrency=8)
    assert load_of(spec).concurrency == 8 and load_of(spec, concurrency=16).concurrency == 16
    assert load_of(LoadSpec(mode=Mode.OPEN, rate=100.0), rate=250.0).rate_rps == 250.0


def test_bursts_and_steps_become_the_twins_bursts_and_rate_steps():
    bursty = load_of(LoadSpec(mode=Mode.OPEN, rate=100.0, arrival=ArrivalSpec(kind=ArrivalKind.MMPP, ratio=6.0)))
    assert bursty.kind == Arrivals.BURSTY and bursty.burst_ratio == 6.0
    steps = load_of(LoadSpec(mode=Mode.OPEN, rate=100.0, arrival=ArrivalSpec(kind=ArrivalKind.STEP,
                                                                             steps=((5.0, 1.0), (5.0, 2.0)))))
    assert steps.kind == Arrivals.TRACE and steps.steps == ((0.0, 100.0), (5.0, 200.0))


def test_sequences_are_refused_with_the_reason():
    with pytest.raises(Unmodelled, match="sequence"):
        load_of(LoadSpec(mode=Mode.CLOSED, model="stream_acc", classes=(), sequences=(SequenceSpec(),)))
