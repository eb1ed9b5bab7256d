"""The twin's fast path for requests that always run alone (max_batch_size 1 or no dynamic batching), open loop.

Every request is its own execution, taken first come first served by the first instance free, so one pass over the
arrivals with a heap of instance free times gives what the event loop would, at a fraction of its cost. A shared
device goes to the executions in the order they ask for it, as in the event loop.
"""
from __future__ import annotations

import heapq
from math import inf
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
    share, io = costs.share[1], costs.io_us[1] * 1e-6
    private, shared = (service * (1 - share) + io).tolist(), (service * share).tolist()
    stop = load.duration_s + max(1.0, 0.2 * load.duration_s)
    idle, device, push, pop = instances, 0.0, heapq.heappush, heapq.heappop
    ends: list = []  # executions' ends
    asking: list = []  # executions on their own part: when they ask for the device, their index, start, its part
    record = []

    def grant() -> None:  # the device goes to the executions in the order they ask for it
        nonlocal device
        ready, i, start, part = pop(asking)
        device = (device if device > ready else ready) + part
        push(ends, device)
        record.append((0, i, i + 1, start, device, 1))

    for i, start in enumerate(times.tolist()):
        while True:  # what happens before this request can start, in time order
            ask = asking[0][0] if asking else inf
            end = ends[0] if ends else inf
            if ask <= end and (ask <= start or not idle):
                grant()
            elif end < ask and (end <= start or not idle):
                start = start if start > end else end  # it waited for this instance
                pop(ends)
                idle += 1
            else:
                break
        if start > stop:
            break  # the run ends before this request starts; it and all later ones are unfinished
        idle -= 1
        if share:
            push(asking, (start + private[i], i, start, shared[i]))
        else:
            push(ends, start + private[i])
            record.append((0, i, i + 1, start, start + private[i], 1))
    while asking:  # executions still on their own part at the end: their ends lie past it
        grant()
    executions = [(r[3], 1) for r in record]
    return assemble(load, [times.tolist()], [kinds.tolist()], record, [], executions, stop, overhead_us)
