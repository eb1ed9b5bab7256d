"""The twin's fast path for requests that always run alone (max_batch_size 1 or no dynamic batching), open loop.

Every request is its own execution, taken first come first served by the first instance free, so one pass over the
arrivals with a heap of instance free times gives what the event loop would, at a fraction of its cost.
"""
from __future__ import annotations

import heapq
from random import Random

import numpy as np

from app.twin.costs import Costs
from app.twin.load import Load, arrivals
from app.twin.simulated import Run, assemble


def simulate_alone(instances: int, costs: Costs, load: Load, rng: Random, overhead_us: float = 0.0) -> Run:
    """Run an open-loop load through instances that execute one request at a time, in arrival order."""
    times, kinds = arrivals(load, rng)
    noise = np.random.default_rng(rng.getrandbits(63))
    sigma = costs.sigmas()[1]
    mean = costs.mean_us[1] * 1e-6
    service = (mean * np.exp(sigma * noise.standard_normal(len(times)) - sigma * sigma / 2) if sigma
               else np.full(len(times), mean))
    share, io = costs.share, costs.io_us[1] * 1e-6
    private, shared = (service * (1 - share) + io).tolist(), (service * share).tolist()
    stop = load.duration_s + max(1.0, 0.2 * load.duration_s)
    free, device, replace = [0.0] * instances, 0.0, heapq.heapreplace
    record = []
    for i, arrival in enumerate(times.tolist()):
        start = free[0] if free[0] > arrival else arrival
        if start > stop:
            break  # the run ends before this request starts; it and all later ones are unfinished
        ready = start + private[i]
        if share:
            device = done = (device if device > ready else ready) + shared[i]
        else:
            done = ready
        replace(free, done)
        record.append((0, i, i + 1, start, done, 1))
    executions = [(r[3], 1) for r in record]
    return assemble(load, [times.tolist()], [kinds.tolist()], record, [], executions, stop, overhead_us)
