"""The twin's dynamic batcher: the delay at low and high load, and instances splitting the queue."""
from __future__ import annotations

import statistics
from random import Random

from app.twin import Batcher, Costs, Load, simulate

DELAY_S = 0.005
COSTS = Costs.table(lambda b: 500 + 125 * b, 8)  # t(8) = 1.5 ms: one instance answers up to 5,333/s in eights
EIGHTS = Batcher(max_batch=8, preferred=(8,), delay_s=DELAY_S, batching=True)


def test_at_low_load_a_request_waits_about_the_delay():
    """20 req/s, a 5 ms delay, preferred 8: a batch never fills, so nearly every request waits the whole delay."""
    runs = [simulate(EIGHTS, COSTS, Load.poisson(20.0, 30.0), Random(seed)).figures() for seed in range(3)]
    ratios = [f.queue_ms / (DELAY_S * 1e3) for f in runs]
    # Measured over 8 seeds of 60 s: 0.951-0.965 (a request that finds one waiting leaves with it, earlier).
    assert all(0.9 <= r <= 1.0 for r in ratios), f"mean wait / delay {ratios}, batches {[f.mean_batch for f in runs]}"
    assert all(f.mean_batch < 1.2 for f in runs), f"mean batch {[f.mean_batch for f in runs]}: company is rare"


def test_at_high_load_batches_fill_the_preferred_size_before_the_delay():
    """4,000 req/s fill an 8 in 2 ms: batches are 8 and the 5 ms delay adds nothing beyond the filling."""
    runs = [simulate(EIGHTS, COSTS, Load.poisson(4000.0, 3.0), Random(seed)).figures() for seed in range(3)]
    batches, waits = [f.mean_batch for f in runs], [f.queue_ms for f in runs]
    assert min(batches) >= 7.9, f"mean batch {batches}: the preferred 8 should fill every time"
    # Measured 1.00-1.05 ms over 5 seeds: the filling (3.5 gaps of 0.25 ms) plus the wait for the instance.
    assert max(waits) <= 0.25 * DELAY_S * 1e3, f"mean wait {waits} ms against a {DELAY_S * 1e3:g} ms delay"


def test_the_delay_costs_at_low_load_and_not_at_high_load():
    """The lab's queue-delay scenario (5.13): 10 ms adds about itself to p50 at 40 req/s, far less at 32 in flight."""
    costs = Costs.table(lambda b: 2500 + 500 * b + 3000 * b ** 0.35, 32, cv=0.03, share=0.5)  # gpu_sim's model

    def p50(delay_s: float, load: Load) -> float:
        batcher = Batcher(max_batch=32, preferred=(4, 8), delay_s=delay_s, batching=True)
        return statistics.mean(simulate(batcher, costs, load, Random(s), 500.0).figures().p50_ms for s in range(2))

    low = p50(0.010, Load.poisson(40.0, 20.0)) - p50(0.0, Load.poisson(40.0, 20.0))
    closed = Load.closed(32, 5.0, warmup_s=1.0)
    high = p50(0.010, closed) - p50(0.0, closed)
    # The lab measured +9.8-10.0 ms at low load and +0.0-0.1 ms (or less) at 32 in flight; its checks: >= 0.6 × the
    # delay, and the high-load change at most half the low-load one.
    assert low >= 0.6 * 10.0, f"low load: the 10 ms delay moved p50 by {low:.2f} ms"
    assert high <= 0.5 * low, f"high load: p50 moved {high:.2f} ms, low load {low:.2f} ms"


def test_more_instances_split_the_queue_into_smaller_batches():
    """The lab's instances × batching scenario: 16 in flight, 2 ms delay, 1 vs 4 instances."""
    costs = Costs.table(lambda b: 2500 + 500 * b + 3000 * b ** 0.35, 32, cv=0.03, share=0.5)

    def batch(instances: int) -> float:
        batcher = Batcher(instances=instances, max_batch=32, preferred=(4, 8), delay_s=0.002, batching=True)
        return simulate(batcher, costs, Load.closed(16, 5.0, warmup_s=1.0), Random(1), 500.0).figures().mean_batch

    one, four = batch(1), batch(4)
    # The lab measured 8.0 vs 3.7-4.0 (2.00-2.15×) and checks >= 1.5×; the twin gives ~7.5 vs ~3.2.
    assert one / four >= 1.5, f"mean batch 1 instance {one:.2f}, 4 instances {four:.2f}: ratio {one / four:.2f}"


def test_without_batching_every_request_runs_alone():
    """max_batch_size 1 (or no dynamic batching): one request per execution, whatever the load."""
    f = simulate(Batcher(instances=2), COSTS, Load.poisson(1500.0, 2.0), Random(0)).figures()
    assert f.histogram == ((1, f.histogram[0][1]),), f"batch sizes {f.histogram}"


def test_under_overload_a_delay_lets_batches_grow_to_max_batch_size():
    """Triton's rule: once the oldest request has waited the delay, everything up to max_batch_size goes; with no
    delay a batch that reached a preferred size goes at once, so overload batches stay at the largest preferred."""
    costs = Costs.table(lambda b: 2000 + 200 * b, 32)
    overload = Load.poisson(2 * 8 / 3.6e-3, 3.0)  # twice what eights can answer

    def batch(delay_s: float) -> float:
        batcher = Batcher(max_batch=32, preferred=(4, 8), delay_s=delay_s, batching=True)
        return simulate(batcher, costs, overload, Random(1)).figures().mean_batch

    grown, kept = batch(0.0005), batch(0.0)
    # Measured 31.6 and 7.98 (the first batches, before the queue builds, are smaller).
    assert grown > 30 and 7.9 <= kept <= 8.0, f"mean batch with a 500 µs delay {grown:.2f}, without {kept:.2f}"


def _executions(batcher: Batcher, arrivals_ms: list[float]) -> list[int]:
    """Return the batch sizes executed, in order, for these arrivals on a 10 ms execution of any size."""
    costs = Costs.table(lambda b: 10_000, batcher.max_batch)
    run = simulate(batcher, costs, Load.replay([t / 1e3 for t in arrivals_ms], 0.05), Random(0))
    return run.exec_size.tolist()


# 8 at 0 ms run at once; 8 at 1 ms form a preferred 8, which the 1 at 2 ms grows past every preferred size (9);
# 8 at 3 ms form the next batch. Both wait for the instance until 10 ms.
QUEUED_BEHIND = [0.0] * 8 + [1.0] * 8 + [2.0] + [3.0] * 8


def test_an_instance_merges_the_batches_behind_the_one_it_takes_once_they_waited_the_delay():
    """Triton's InstanceQueue::Dequeue: with a delay, the instance taking the 9 at 10 ms also takes the 8 formed at
    3 ms (it waited 7 ms > 2 ms) while the two fit max_batch_size: one execution of 17, not a 9 and an 8."""
    batcher = Batcher(max_batch=32, preferred=(8,), delay_s=0.002, batching=True)
    assert _executions(batcher, QUEUED_BEHIND) == [8, 17]


def test_no_merge_before_the_delay_or_beyond_max_batch_size():
    """The 8 behind has waited 7 ms: under an 8 ms delay it stays; with max_batch_size 16 a 9 and an 8 do not fit."""
    patient = Batcher(max_batch=32, preferred=(8,), delay_s=0.008, batching=True)
    small = Batcher(max_batch=16, preferred=(8,), delay_s=0.002, batching=True)
    assert _executions(patient, QUEUED_BEHIND) == [8, 9, 8]
    assert _executions(small, QUEUED_BEHIND) == [8, 9, 8]
