"""Invariants over many random configs and loads: every request is accounted for, batches respect the limits."""
from __future__ import annotations

from dataclasses import replace
from random import Random

import numpy as np

from app.twin import Batcher, Costs, Load, Policy, ClassShare, simulate
from app.twin.simulated import ANSWERED, REJECTED


def _random_case(r: Random) -> tuple[Batcher, Costs, Load]:
    max_batch = r.choice([1, 2, 4, 8, 16])
    preferred = tuple(sorted(r.sample(range(1, max_batch + 1), r.randint(1, min(3, max_batch)))))
    levels = r.choice([1, 1, 2, 3])
    policies = tuple(Policy(timeout_s=r.choice([0.0, 0.0, 0.005, 0.02]), reject=r.random() < 0.5,
                            max_queue_size=r.choice([0, 0, 4, 32])) for _ in range(levels))
    plain = levels == 1 and policies[0] == Policy()
    batcher = Batcher(instances=r.randint(1, 4), max_batch=max_batch, preferred=preferred,
                      delay_s=r.choice([0.0, 0.0002, 0.002]), levels=levels, default_level=r.randint(1, levels),
                      policies=policies, batching=max_batch > 1, prefetch=plain)
    costs = Costs.table(lambda b: 400 + 150 * b, max_batch, cv=r.choice([0.0, 0.2]), io_us=r.choice([0.0, 30.0]),
                        share=r.choice([0.0, 0.5, 1.0]))
    if r.random() < 0.3:  # each size its own part of the shared device (gpu_sim's compute per size)
        costs = replace(costs, share=(0.0, *(r.uniform(0.2, 1.0) for _ in range(max_batch))))
    classes = tuple(ClassShare(f"c{i}", r.random() + 0.1, r.randint(0, levels)) for i in range(r.randint(1, 3)))
    load = r.choice([Load.poisson(r.uniform(200, 6000), 1.0), Load.bursty(r.uniform(200, 3000), 1.0),
                     Load.closed(r.randint(1, 40), 1.0)]).with_classes(*classes)
    return batcher, costs, load


def test_every_request_is_answered_refused_or_unfinished_and_batches_fit():
    r = Random(2024)
    for case in range(30):
        batcher, costs, load = _random_case(r)
        run = simulate(batcher, costs, load, Random(case), overhead_us=r.choice([0.0, 300.0]))
        f = run.figures()
        what = f"case {case}: {batcher}, {load.kind.value} {load.rate_rps or load.concurrency}: {f}"
        assert f.answered + f.rejected + f.unfinished == f.offered, what
        assert (run.exec_size >= 1).all() and (run.exec_size <= batcher.max_batch).all(), what
        answered = run.state == ANSWERED
        assert (run.start[answered] >= run.arrival[answered] - 1e-12).all(), f"started before arriving: {what}"
        assert (run.done[answered] > run.start[answered]).all(), what
        assert int(np.sum(run.batch[answered] > 0)) == int(answered.sum()), what
        if all(p.max_queue_size == 0 and (p.timeout_s == 0 or not p.reject) for p in batcher.policies):
            assert not (run.state == REJECTED).any(), f"refused without a reason: {what}"
        for i in range(len(load.classes)):
            run.figures(i)  # every class has figures, even an empty one
