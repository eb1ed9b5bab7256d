"""The searches alone, on made-up points (their measuring: tests/unit/experiments/sweep/test_sweeper.py)."""
from __future__ import annotations

from app.experiments.sweep.points import Point
from app.experiments.sweep.search import AdaptiveSearch, GridSearch
from app.experiments.sweep.space import Choice, SearchSpace
from app.store.database import DONE, FAILED
from app.timeline.figures import Figures

SPACE = SearchSpace("m", loads=(1, 2, 4, 8, 16), p99_budget_ms=50.0)


def point(load: float, rps: float, p99: float, status: str = DONE) -> Point:
    return Point(Choice(instances=1), load, status,
                 figures=Figures.from_dict({"client": {"all": {"throughput_rps": rps, "goodput_rps": rps,
                                                               "p99_ms": p99}}}))


def drive(search, measure) -> list[float]:
    """Run a search to its end against measure(load) -> Point; return the loads it asked for."""
    asked = []
    while (load := search.next()) is not None:
        asked.append(load)
        search.record(measure(load))
    return asked


def test_a_grid_asks_every_load_and_stops_at_a_configuration_the_server_refused():
    assert drive(GridSearch(SPACE.loads), lambda load: point(load, 10 * load, 5.0)) == [1, 2, 4, 8, 16]
    refused = drive(GridSearch(SPACE.loads), lambda load: point(load, 0.0, 0.0, FAILED))
    assert refused == [1], refused


def test_adaptive_bisects_to_the_highest_load_inside_the_sla():
    # p99 = 10 ms per request in flight: 4 in flight is inside 50 ms, 8 is not
    search = AdaptiveSearch(SPACE, "1 instance", lambda: None)
    asked = drive(search, lambda load: point(load, min(load * 100, 800), 10.0 * load))
    assert asked == [4, 8], asked  # the middle first, then up: 4 in, 8 out, nothing left between
    assert (search.lo, search.hi) == (2, 3) and search.skipped == ""


def test_adaptive_starts_at_the_best_load_and_drops_a_configuration_that_cannot_beat_it():
    best = point(4, 1000.0, 30.0)
    search = AdaptiveSearch(SPACE, "slow config", lambda: best)
    asked = drive(search, lambda load: point(load, 20.0 * load, 5.0 * load))
    # at 4 in flight it answers 80 req/s: even scaled to 16 in flight (320 req/s, x1.1) it cannot reach 1,000
    assert asked == [4], asked
    assert search.skipped.startswith("slow config: loads 8, 16 not measured — at most 320 req/s"), search.skipped


def test_adaptive_keeps_searching_a_configuration_that_might_beat_the_best():
    best = point(4, 100.0, 30.0)
    search = AdaptiveSearch(SPACE, "fast config", lambda: best)
    asked = drive(search, lambda load: point(load, 90.0 * load, 5.0 * load))
    assert asked == [4, 8, 16] and search.skipped == "", (asked, search.skipped)
