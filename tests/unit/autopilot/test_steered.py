"""The instances each second of a steered trace served: every reload of a stepwise add, a single change, none when
nothing was applied."""
from __future__ import annotations

from app.autopilot.steered import count_at, served_counts


def test_each_second_counts_the_instances_applied_before_it():
    changes = [(100.0, 3), (130.0, 2)]
    assert [count_at(changes, 1, t) for t in (99.5, 100.5, 129.9, 130.0, 131.0)] == [1, 3, 3, 2, 2]
    assert count_at([], 4, 50.0) == 4
    # a recorded window's changes: a stepwise add's every reload, a single change, nothing applied
    add = {"decision": {"knobs": {"instance_count": 3}}, "applied_t": 101.4, "reloads": [[100.2, 2], [101.4, 3]]}
    one = {"decision": {"knobs": {"instance_count": 2}}, "applied_t": 130.0}
    refused = {"decision": {"knobs": {"instance_count": 2}}}
    delay = {"decision": {"knobs": {"max_queue_delay_microseconds": 100}}, "applied_t": 140.0}
    served = [c for rec in (add, one, refused, delay) for c in served_counts(rec)]
    assert served == [(100.2, 2), (101.4, 3), (130.0, 2)], served
    assert [count_at(served, 1, t) for t in (100.0, 100.5, 101.5, 131.0)] == [1, 2, 3, 2]
