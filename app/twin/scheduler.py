"""A discrete-event model of Triton's dynamic batcher and instances for one model (one simulated run).

The batcher follows Triton 2.51's DynamicBatchScheduler::GetDynamicBatch: a batch goes out as soon as a preferred
size is reached, the oldest request has waited max_queue_delay, or max_batch_size is full; a batch below the largest
preferred size may keep growing until an instance takes it. Without priority levels or queue policies Triton forms
up to two batches per instance ahead (prefetch); with them, a batch forms only for an idle instance. With a delay,
an instance that takes a batch merges the formed batches behind it whose oldest request has waited longer than the
delay, while they fit max_batch_size (InstanceQueue::Dequeue); the one it stops at grows no more. Where executions
share a device (Costs.share), each runs its own part, then takes the device in the order the executions ask for it
— a small batch started after a large one may be there first. Events are instance completions, requests for the
device, delay expiries and the arrivals that can change a decision, never every arrival.
"""
from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import deque
from random import Random

import numpy as np

from app.twin.alone import simulate_alone
from app.twin.batcher import Batcher, Policy
from app.twin.clients import Clients
from app.twin.costs import Costs
from app.twin.load import Arrivals, Load, arrivals
from app.twin.queues import Queues
from app.twin.simulated import Run, assemble

_EPS = 1e-9  # one nanosecond: float noise must not keep a delay from expiring


def _tables(b: Batcher) -> tuple[list[int], list[int]]:
    """Return, per pending size x, the largest preferred size <= x (0: none) and the next preferred above x."""
    best, above = [], []
    for x in range(b.max_batch + 1):
        best.append(max((p for p in b.preferred if p <= x), default=0))
        above.append(min((p for p in b.preferred if p > x), default=b.preferred[0]))
    return best, above


def _oldest(runs: list, times: list[list[float]]) -> float:
    """Return the arrival of a formed batch's oldest request (its payload's batcher start)."""
    return min(times[level][first] for level, first, _ in runs)


def simulate(batcher: Batcher, costs: Costs, load: Load, rng: Random, overhead_us: float = 0.0) -> Run:
    """Run the load through the batcher once; overhead_us is the client's time around each request."""
    if costs.max_batch < batcher.max_batch:
        raise ValueError(f"the cost table covers batches up to {costs.max_batch}, the batcher forms up to "
                         f"{batcher.max_batch}")
    levels, over = batcher.levels, overhead_us * 1e-6
    closed = load.kind == Arrivals.CLOSED
    if batcher.max_batch == 1 and levels == 1 and not closed and batcher.policies[0] == Policy():
        return simulate_alone(batcher.instances, costs, load, rng, overhead_us)
    level_of = [batcher.level_of(c.priority) - 1 for c in load.classes]
    times: list[list[float]] = [[] for _ in range(levels)]
    kinds: list[list[int]] = [[] for _ in range(levels)]
    if closed:
        merged = times[0] if levels == 1 else []
        clients = Clients(load, level_of, times, kinds, merged if levels > 1 else None, over,
                          np.random.default_rng(rng.getrandbits(63)))
    else:
        at, cls_of = arrivals(load, rng)
        lv = np.asarray(level_of)[cls_of] if len(at) else np.zeros(0, int)
        for level in range(levels):
            mask = lv == level
            times[level], kinds[level] = at[mask].tolist(), cls_of[mask].tolist()
        merged = times[0] if levels == 1 else at.tolist()
    queue = Queues(times, batcher.policies)
    simple = levels == 1 and not queue.capped and not queue.timed
    seen = head = 0  # arrivals so far; the simple queue (one level, no policy) is the arrivals [head, seen)
    noise = np.random.default_rng(rng.getrandbits(63))
    draws, drawn = noise.standard_normal(4096).tolist(), 0

    means = [m * 1e-6 for m in costs.mean_us]
    sigmas = costs.sigmas()
    ios, shares, shared = [i * 1e-6 for i in costs.io_us], costs.share, costs.shared
    best_upto, next_above = _tables(batcher)
    max_batch, max_pref, delay, slots = batcher.max_batch, batcher.max_preferred, batcher.delay_s, batcher.slots
    merge = batcher.batching and delay > 0 and max_batch > 1  # InstanceQueue::Dequeue's merge of queued batches
    stop = load.duration_s + max(1.0, 0.2 * load.duration_s)  # drain a little; what is left is unfinished
    heap: list = []  # executions' ends: done, order, runs
    asking: list = []  # executions not yet at the device: when they ask for it, order, runs, start, size, its part
    free, waiting, curr, device, seq = batcher.instances, deque(), None, 0.0, 0
    record: list = []  # per run of requests: level, first, end, start, done, batch size

    def grant(ask: tuple, device: float) -> float:
        """Give the device to one execution after the ones that asked before it; return when it is free again."""
        ready, order, runs, start, size, part = ask
        done = (device if device > ready else ready) + part
        push(heap, (done, order, runs))
        for level, first, end in runs:
            record.append((level, first, end, start, done, size))
        return done
    executions: list = []  # per execution: start, size
    rejected_seen = 0
    inf, push, pop, exp, length = math.inf, heapq.heappush, heapq.heappop, math.exp, len
    preferred = set(batcher.preferred)
    wake, need, target = (clients.at(1) if closed else merged[0] if merged else inf), 0, 0
    while True:
        now = heap[0][0] if heap and heap[0][0] < wake else wake
        if asking and asking[0][0] < now:
            now = asking[0][0]
        if now == inf or now > stop:
            break
        while asking and asking[0][0] <= now:  # the device goes to the executions in the order they ask for it
            device = grant(pop(asking), device)
        if not (heap and heap[0][0] <= now) and now < wake:
            continue  # only an execution asked for the device: the batcher sees no change
        while heap and heap[0][0] <= now:
            done, _, runs = pop(heap)
            free += 1
            if closed:
                clients.answered(runs, done)
        if closed:
            clients.arrive(now)
        if seen < length(merged) and merged[seen] <= now:
            seen = bisect_right(merged, now, seen)  # simple: the queue is the arrivals between head and seen
            if not simple:
                queue.ingest(now)
        elif now < wake and need and not waiting and not closed:
            continue  # only an instance came free, and the batcher was not waiting for one: nothing changes
        if not simple and queue.timed:
            queue.expire(now)
        if closed and len(queue.rejected) > rejected_seen:
            clients.answered(queue.rejected[rejected_seen:], now, refused=True)
            rejected_seen = len(queue.rejected)
        wake, need = inf, 1
        while True:
            while free and waiting:  # an idle instance takes the oldest formed batch
                size, _, runs = pay = waiting.popleft()
                if pay is curr:
                    curr, target = None, 0  # taken: the batcher starts a new batch
                while merge and waiting:  # and merges the next ones whose oldest request waited out the delay
                    nxt = waiting[0]
                    if now - _oldest(nxt[2], times) <= delay:
                        break
                    if nxt is curr:
                        curr, target = None, 0  # marked executing: the batcher grows it no more
                    if size + nxt[0] > max_batch:
                        break
                    waiting.popleft()
                    size, runs = size + nxt[0], runs + nxt[2]
                mean = means[size]
                if sigmas[size]:
                    if drawn == 4096:
                        draws, drawn = noise.standard_normal(4096).tolist(), 0
                    mean *= exp(sigmas[size] * draws[drawn] - sigmas[size] ** 2 / 2)
                    drawn += 1
                if shared:  # its own part first, then it asks for the device
                    share = shares[size]
                    push(asking, (now + mean * (1 - share) + ios[size], seq, runs, now, size, mean * share))
                else:
                    done = now + mean + ios[size]
                    push(heap, (done, seq, runs))
                    for level, first, end in runs:
                        record.append((level, first, end, now, done, size))
                seq += 1
                free -= 1
                executions.append((now, size))
            if curr is not None and curr[1]:
                curr, target = None, 0  # a saturated batch grows no more: the batcher starts a new one
            if not (length(waiting) < slots or free > length(waiting)):
                need = 0  # no slot: the batcher sleeps until an instance takes a batch
                break
            pending = curr[0] if curr is not None else 0
            queued = seen - head if simple else queue.total
            if not queued:
                need = 0 if target is None else max(1, target)
                break
            room = max_batch - pending
            scanned = queued if queued <= room else room
            top = pending + min(scanned, max_pref - pending)
            best = best_upto[top] - pending if best_upto[top] > pending else 0
            saturate = pending == max_pref  # the next request would pass every preferred size
            oldest = (merged[head] if simple else queue.oldest(scanned)) if delay > 0 else 0.0
            exceeded = delay > 0 and now - oldest >= delay - _EPS
            if best and not exceeded:
                take, saturate = best, saturate or delay == 0
            elif queued > room or pending + scanned >= max_pref:
                take, saturate = scanned, True
            elif exceeded or delay == 0 or (pending and pending not in preferred):
                take = scanned
            else:
                wake = oldest + delay
                if not simple and queue.timed:  # Triton wakes for the next timeout too (never in the past)
                    wake = min(wake, max(queue.closest_timeout(), now + _EPS))
                # Triton's next preferred size, less the batch's; below zero its unsigned counter never wakes it.
                target = next_above[pending + scanned] - pending
                target = None if target < 0 else target
                need = 0 if target is None else max(1, target - queued)
                break
            if curr is None:
                curr = [0, False, []]
                waiting.append(curr)
            if simple:
                curr[2].append((0, head, head + take))
                head += take
            else:
                queue.take(take, curr[2])
            curr[0] += take
            curr[1] = saturate
        if need:  # the arrival that lets a preferred size fill wakes the batcher
            index = seen + need - 1
            if index < length(merged) and merged[index] < wake:
                wake = merged[index]
            if closed:
                wake = min(wake, clients.at(need))
    while asking:  # executions still on their own part at the end: their ends lie past it
        device = grant(pop(asking), device)
    if simple:
        queue.seen[0] = seen
    return assemble(load, times, kinds, record, queue.rejected, executions, stop, overhead_us)
