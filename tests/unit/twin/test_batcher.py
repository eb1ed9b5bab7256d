"""The twin's view of a served config (app.config.settings.ModelSettings)."""
from __future__ import annotations

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings, QueuePolicy, TimeoutAction
from app.twin import Policy, batcher_of


def test_plain_dynamic_batching_prefetches_two_batches_per_instance():
    b = batcher_of(ModelSettings(max_batch_size=32, instance_groups=(InstanceGroup(3),),
                                 dynamic_batching=DynamicBatching((8, 4, 64), 500)))
    assert (b.instances, b.max_batch, b.preferred, b.delay_s, b.levels) == (3, 32, (4, 8), 0.0005, 1), b
    assert b.prefetch and b.slots == 6, b


def test_no_preferred_size_means_max_batch_size():
    b = batcher_of(ModelSettings(max_batch_size=16, dynamic_batching=DynamicBatching((), 100)))
    assert b.preferred == (16,) and b.instances == 1, b


def test_without_dynamic_batching_requests_run_alone_and_queue_without_bound():
    for settings in (ModelSettings(max_batch_size=8), ModelSettings(max_batch_size=0, dynamic_batching=None)):
        b = batcher_of(settings)
        assert b.max_batch == 1 and not b.batching and b.slots == float("inf"), b


def test_priority_levels_and_policies_per_level():
    reject = QueuePolicy(TimeoutAction.REJECT, 5000, False, 0)
    delay = QueuePolicy(TimeoutAction.DELAY, 20000, False, 64)
    b = batcher_of(ModelSettings(max_batch_size=8, dynamic_batching=DynamicBatching(
        (4,), 100, priority_levels=3, default_priority_level=3, default_queue_policy=delay,
        priority_queue_policies={1: reject})))
    assert b.levels == 3 and b.default_level == 3 and not b.prefetch and b.slots == 0, b
    assert b.policies == (Policy(0.005, True, 0), Policy(0.02, False, 64), Policy(0.02, False, 64)), b.policies


def test_a_default_policy_that_acts_stops_prefetching():
    bounded = QueuePolicy(TimeoutAction.REJECT, 0, False, 10)
    b = batcher_of(ModelSettings(max_batch_size=8, dynamic_batching=DynamicBatching(
        (4,), 100, default_queue_policy=bounded)))
    assert not b.prefetch and b.policies == (Policy(0.0, True, 10),), b
