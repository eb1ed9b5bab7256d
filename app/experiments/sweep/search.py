"""Which loads a sweep measures for one configuration, apart from how a point is measured (app.experiments.sweep.sweeper):
a search says the next load (`next()`), is told the point measured there (`record(point)`), and ends with None.

GridSearch measures every load; AdaptiveSearch bisects for the configuration's highest load inside the SLA (with
room: SearchSpace.holds, so that a load on the budget's edge sends it one lower) and
gives up on it once an upper bound on its throughput inside the SLA cannot beat the best point so far (assumption,
stated on the page: more load never lowers throughput or p99).
"""
from __future__ import annotations

from collections.abc import Callable

from app.experiments.sweep.points import Point
from app.experiments.sweep.space import CONCURRENCY, SearchSpace
from app.store.database import FAILED

BOUND_MARGIN = 1.10  # an upper bound must fall this far below the best before a configuration is dropped


class GridSearch:
    """Every load in order; a configuration that could not be applied ends it."""

    def __init__(self, loads: tuple[float, ...]) -> None:
        self.loads, self._i, self._over = loads, 0, False
        self.skipped = ""  # what was left unmeasured and why ('' for a grid)

    def next(self) -> float | None:
        """Return the next load to measure, None when the search is over."""
        return None if self._over or self._i >= len(self.loads) else self.loads[self._i]

    def record(self, point: Point) -> None:
        """Take the point measured at the load next() returned."""
        self._i += 1
        self._over = point.status == FAILED


class AdaptiveSearch:
    """Bisect the loads for the highest one inside the SLA with room, starting at the best point's load (else the
    middle)."""

    def __init__(self, space: SearchSpace, label: str, best: Callable[[], Point | None]) -> None:
        self.space, self.label, self.best = space, label, best  # best(): the operating point over every point so far
        self.lo, self.hi = -1, len(space.loads)  # loads[lo] holds the SLA with room, loads[hi] not (as far as measured)
        self.mine: dict[int, Point] = {}
        self.skipped = ""
        self._mid: int | None = None
        self._over = False

    def next(self) -> float | None:
        """Return the next load to measure, None when the search is over."""
        if self._over or self.hi - self.lo <= 1:
            return None
        self._mid = (self.lo + self.hi) // 2 if self.mine else self._first_probe()
        return self.space.loads[self._mid]

    def record(self, point: Point) -> None:
        """Take the point measured at the load next() returned: narrow the bracket, or drop the configuration."""
        if point.status == FAILED:
            self._over = True
            return
        mid = self._mid
        self.mine[mid] = point
        if self.space.holds(point.p99, point.throughput):
            self.lo = mid
        else:
            self.hi = mid
        if self.hi - self.lo <= 1:
            return
        best, bound = self.best(), self._bound()
        # Only a best with room can rule a configuration out: any point with room outranks one on the budget's edge.
        if (best is not None and self.space.holds(best.p99, best.throughput) and bound is not None
                and bound * BOUND_MARGIN < (best.goodput or 0.0)):
            left = ", ".join(f"{v:g}" for v in self.space.loads[self.lo + 1:self.hi])
            self.skipped = (f"{self.label}: loads {left} not measured — at most {bound:,.0f} req/s inside the SLA "
                            f"with room, the best has {best.goodput:,.0f} req/s goodput")
            self._over = True

    def _first_probe(self) -> int:
        """Return where the search starts: the best point's load so far, else the middle load.

        At the best point's load a configuration that cannot beat it is usually dropped at once by the bound; one
        that can is searched upwards from there.
        """
        best, loads = self.best(), self.space.loads
        return loads.index(best.load) if best is not None and best.load in loads else (len(loads) - 1) // 2

    def _bound(self) -> float | None:
        """Return an upper bound on the throughput inside the SLA at any unmeasured load in (lo, hi)."""
        loads, mine, lo, hi = self.space.loads, self.mine, self.lo, self.hi
        if hi < len(loads) and hi in mine:
            return mine[hi].throughput  # throughput does not fall with load: loads below hi give at most this
        if self.space.load_kind != CONCURRENCY:
            return loads[hi - 1]  # an open loop cannot answer more than it offers
        if lo >= 0 and mine[lo].throughput:
            return mine[lo].throughput * loads[hi - 1] / loads[lo]
        return None
