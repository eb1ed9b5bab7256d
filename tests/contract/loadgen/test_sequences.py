"""Sequences on the stateful model (stream_acc: a running sum per correlation ID): with sequence batching every step's
answer is the running sum the generator expects; under dynamic batching the sums go wrong and the generator says so."""
from __future__ import annotations

from collections import defaultdict

from loadgen.inputs.shapes import LengthSpec
from loadgen.outcome import Outcome
from loadgen.spec import LoadSpec, SequenceSpec
from tests.contract.loadgen.serverkit import reload_with, run_load


def sequences_only(steps: int, count: int = 4) -> LoadSpec:
    seq = SequenceSpec(count=count, length=LengthSpec("uniform", low=3, high=8))
    return LoadSpec(classes=(), sequences=(seq,), duration_s=None, max_requests=steps, seed=11)


def test_sequence_batching_keeps_every_running_sum_right(triton):
    records, summary, _ = run_load(triton, sequences_only(60))
    assert summary["sequences"]["ok"] == len(records) == 60
    assert summary["sequences"]["wrong_output"] == 0
    steps = defaultdict(list)
    for r in records:
        steps[r.sequence_id].append(r.sent_s)
    assert len(steps) >= 8 and all(sid > 0 for sid in steps)  # 60 steps of sequences of 3 to 8: 8 or more IDs
    # Four slots: never more than four sequences have steps outstanding at once.
    spans = sorted((min(v), max(v)) for v in steps.values())
    assert max(sum(a <= t <= b for a, b in spans) for t, _ in spans) <= 4


def test_wrong_outputs_are_detected_under_dynamic_batching(triton, restore_model):
    restore_model("stream_acc")

    def dynamic_instead_of_sequence(config):
        config.ClearField("sequence_batching")
        config.dynamic_batching.max_queue_delay_microseconds = 1000

    reload_with(triton, "stream_acc", dynamic_instead_of_sequence)
    records, summary, _ = run_load(triton, sequences_only(40))
    wrong = summary["sequences"]["wrong_output"]
    # no correlation ID arrives: every step lands in one shared sum, and four sequences interleave
    assert wrong > 0 and summary["sequences"]["errors_by_kind"] == {"wrong_output": wrong}, summary["sequences"]
    assert {r.outcome for r in records} <= {Outcome.OK, Outcome.WRONG_OUTPUT}
