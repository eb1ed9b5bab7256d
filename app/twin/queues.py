"""The batcher's priority queue: per level, FIFO runs of request indices, with Triton's queue policies."""
from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque

from app.twin.batcher import Policy


class Queues:
    """Requests waiting at each priority level, kept as [first, end) runs of indices into that level's arrivals.

    Runs instead of single requests keep the cost per batch, not per request: arrivals join the queue in bulk by
    bisection. A level is served fresh runs first, then the runs its DELAY timeout moved behind (Triton's order).
    """

    def __init__(self, times: list[list[float]], policies: tuple[Policy, ...]) -> None:
        self.times = times  # per level, sorted; a closed loop appends as answers come back
        self.policies = policies
        levels = len(times)
        self.seen = [0] * levels
        self.fresh = [deque() for _ in range(levels)]
        self.delayed = [deque() for _ in range(levels)]
        self.size = [0] * levels
        self.total = 0
        self.rejected: list[tuple[int, int, int]] = []  # (level, first, end) refused or timed out
        self.capped = any(p.max_queue_size for p in policies)
        self.timed = any(p.timeout_s > 0 for p in policies)

    def ingest(self, now: float) -> None:
        """Enqueue every arrival up to now; a full level refuses the ones that find it full."""
        for level, times in enumerate(self.times):
            seen, new = self.seen[level], bisect_right(times, now)
            if new == seen:
                continue
            # Between two looks the queue only grows, so the first arrivals fit and the rest found it full.
            cap = self.policies[level].max_queue_size
            room = new - seen if not cap else max(0, min(new - seen, cap - self.size[level]))
            if room:
                runs = self.fresh[level]
                if runs and runs[-1][1] == seen:
                    runs[-1][1] = seen + room
                else:
                    runs.append([seen, seen + room])
                self.size[level] += room
                self.total += room
            if seen + room < new:
                self.rejected.append((level, seen + room, new))
            self.seen[level] = new

    def expire(self, now: float) -> None:
        """Apply each level's timeout: REJECT drops the expired requests, DELAY moves them behind the fresh."""
        for level, policy in enumerate(self.policies):
            if policy.timeout_s <= 0 or not self.fresh[level]:
                continue
            limit = bisect_right(self.times[level], now - policy.timeout_s)  # indices below it have expired
            runs = self.fresh[level]
            while runs and runs[0][0] < limit:
                first, end = runs[0]
                cut = min(end, limit)
                if cut == end:
                    runs.popleft()
                else:
                    runs[0][0] = cut
                self.size[level] -= cut - first
                self.total -= cut - first
                if policy.reject:
                    self.rejected.append((level, first, cut))
                else:
                    self._behind(level, first, cut)

    def _behind(self, level: int, first: int, end: int) -> None:
        runs = self.delayed[level]
        if runs and runs[-1][1] == first:
            runs[-1][1] = end
        else:
            runs.append([first, end])
        self.size[level] += end - first
        self.total += end - first

    def oldest(self, within: int) -> float:
        """Return the earliest arrival among the first `within` requests in service order."""
        best = math.inf
        for times, fresh, delayed, size in zip(self.times, self.fresh, self.delayed, self.size):
            if size:
                if fresh and times[fresh[0][0]] < best:
                    best = times[fresh[0][0]]
                if delayed and times[delayed[0][0]] < best:
                    best = times[delayed[0][0]]
                within -= size
                if within <= 0:
                    break
        return best

    def closest_timeout(self) -> float:
        """Return when the next queued request times out (inf when none will)."""
        soonest = math.inf
        for level, policy in enumerate(self.policies):
            if policy.timeout_s > 0 and self.fresh[level]:
                soonest = min(soonest, self.times[level][self.fresh[level][0][0]] + policy.timeout_s)
        return soonest

    def take(self, count: int, out: list) -> None:
        """Move the first `count` requests in service order into out as (level, first, end) runs."""
        self.total -= count
        for level in range(len(self.times)):
            if count <= 0:
                return
            if not self.size[level]:
                continue
            for runs in (self.fresh[level], self.delayed[level]):
                while count and runs:
                    first, end = runs[0]
                    if end - first <= count:
                        runs.popleft()
                        out.append((level, first, end))
                        self.size[level] -= end - first
                        count -= end - first
                    else:
                        runs[0][0] = first + count
                        out.append((level, first, first + count))
                        self.size[level] -= count
                        count = 0
