"""Traffic forms map onto load specs."""
from __future__ import annotations

from app.traffic import TrafficForm, build_spec
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
