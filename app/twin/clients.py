"""A closed loop's clients: each sends its next request its own overhead after its answer (or refusal) came."""
from __future__ import annotations

import math
from bisect import insort

import numpy as np

from app.twin.load import Load

_CHUNK = 4096
REFUSED_S = 1e-4  # a refusal still costs its client a round trip: with no overhead known, a client refused at once
# would send again at the same instant, forever


class Clients:
    """Requests not yet sent, sorted by send time, moved into the level queues' arrivals as time passes.

    The overhead varies per request (lognormal, the load's overhead_cv): a batch's answers reach their clients
    one by one, and a fixed overhead would send the whole batch back at one instant, batching it again whole.
    """

    def __init__(self, load: Load, level_of: list[int], times: list[list[float]], kinds: list[list[int]],
                 merged: list[float] | None, overhead_s: float, gen: np.random.Generator) -> None:
        self.end, self.times, self.kinds, self.merged = load.duration_s, times, kinds, merged
        self.level_of, self.mean, self.gen = level_of, overhead_s, gen
        self.sigma = math.sqrt(math.log1p(load.overhead_cv ** 2)) if overhead_s > 0 else 0.0
        self.future: list[tuple[float, int]] = []  # (send time, class), sorted; [head:] not yet sent
        self.head = 0
        self.gaps, self.drawn = [], 0
        for cls, n in enumerate(load.clients()):
            self._send(0.0, [cls] * n)

    def _send(self, at_s: float, classes: list[int], least: float = 0.0) -> None:
        if self.drawn + len(classes) > len(self.gaps):
            scale = np.exp(self.sigma * self.gen.standard_normal(_CHUNK + len(classes)) - self.sigma ** 2 / 2)
            self.gaps, self.drawn = (self.mean * scale).tolist(), 0
        gaps = self.gaps[self.drawn:self.drawn + len(classes)]
        self.drawn += len(classes)
        for cls, gap in zip(classes, gaps):
            gap = gap if gap > least else least
            if at_s + gap < self.end:
                insort(self.future, (at_s + gap, cls), lo=self.head)

    def answered(self, runs, at_s: float, refused: bool = False) -> None:
        """The requests of these (level, first, end) runs got their answer (or refusal) at at_s."""
        for level, first, end in runs:
            self._send(at_s, self.kinds[level][first:end], REFUSED_S if refused else 0.0)

    def arrive(self, now: float) -> None:
        """Append every request sent by now to its level's arrivals, in time order."""
        future, head = self.future, self.head
        while head < len(future) and future[head][0] <= now:
            at_s, cls = future[head]
            head += 1
            level = self.level_of[cls]
            self.times[level].append(at_s)
            self.kinds[level].append(cls)
            if self.merged is not None:
                self.merged.append(at_s)
        if head > _CHUNK:  # drop what was sent, now and then, so the list stays short
            del future[:head]
            head = 0
        self.head = head

    def at(self, nth: int) -> float:
        """Return when the nth request from now will be sent (inf when fewer will)."""
        index = self.head + max(1, nth) - 1
        return self.future[index][0] if index < len(self.future) else math.inf
