"""A sweep decides with headroom: a point inside the budget but within the headroom of it is on the budget's edge, and is
named only when no point holds the budget with room — by the recommendation, the searches and the twin's ranking alike
(made-up points; the referee's measurements behind the default: docs/MEASUREMENTS.md)."""
from __future__ import annotations

import dataclasses

import pytest

from app.experiments.sweep.points import Point
from app.experiments.sweep.recommend import ON_EDGE, ONLY, candidates, operating_point, recommend
from app.experiments.sweep.search import AdaptiveSearch
from app.experiments.sweep.space import EDGE, INSIDE, OVER, P99_HEADROOM, Choice, SearchSpace, sla_state
from app.experiments.sweep.twin_rank import TwinSearch
from app.store.database import DONE
from app.timeline.figures import Figures

SPACE = SearchSpace("m", instances=(2, 3, 4), delays_us=(5000,), loads=(1, 2, 4, 8, 16), p99_budget_ms=22.0)


def point(instances: int, load: float, rps: float, p99: float) -> Point:
    return Point(Choice(instances=instances, delay_us=5000), load, DONE, True,
                 figures=Figures.from_dict({"client": {"all": {"throughput_rps": rps, "goodput_rps": rps,
                                                               "p99_ms": p99}}}))


def test_a_p99_inside_the_budget_but_within_the_headroom_is_on_the_edge():
    assert P99_HEADROOM == pytest.approx(0.10) and SPACE.p99_headroom == P99_HEADROOM
    assert [SPACE.sla_state(p99, 700.0) for p99 in (14.0, 19.8, 19.9, 21.5, 22.0, 22.1, None)] == [
        INSIDE, INSIDE, EDGE, EDGE, EDGE, OVER, OVER]
    assert SPACE.holds(19.8, 700.0) and not SPACE.holds(21.5, 700.0) and SPACE.meets_sla(21.5, 700.0)
    assert SPACE.sla_state(14.0, None) == OVER, "a throughput not measured is never inside"
    floor = SearchSpace("m", p99_budget_ms=22.0, min_throughput_rps=800.0)
    assert floor.sla_state(14.0, 700.0) == OVER and floor.sla_state(21.5, 900.0) == EDGE
    assert sla_state(21.5, 22.0, 0.0) == INSIDE, "no headroom: the budget alone, as Model Analyzer and 5.12 read it"


def test_the_headroom_is_checked_and_a_space_stored_before_it_existed_reads_back_without_one():
    for bad in (-0.1, 0.6, float("nan")):
        with pytest.raises(ValueError):
            SearchSpace("m", p99_budget_ms=22.0, p99_headroom=bad)
    stored = SPACE.to_dict()
    assert SearchSpace.from_dict(stored).p99_headroom == P99_HEADROOM
    del stored["p99_headroom"]
    assert SearchSpace.from_dict(stored).p99_headroom == 0.0, "its recommendation was made on the budget alone"


def test_the_operating_point_holds_the_budget_with_room_before_any_point_on_its_edge():
    edge = point(4, 16, 794.0, 21.5)  # the most goodput, 2 % under the budget
    roomy = point(4, 8, 717.0, 13.9)
    other = point(3, 8, 700.0, 14.7)
    points = [edge, roomy, other, point(2, 16, 800.0, 25.0)]
    assert operating_point(SPACE, points) is roomy
    no_headroom = SearchSpace("m", instances=(2, 3, 4), delays_us=(5000,), loads=SPACE.loads, p99_budget_ms=22.0,
                              p99_headroom=0.0)
    assert operating_point(no_headroom, points) is edge, "headroom 0: the budget alone names the edge point"
    assert operating_point(SPACE, [edge, point(3, 16, 780.0, 21.0)]) is edge, "none with room: the best on the edge"
    assert operating_point(SPACE, [point(2, 16, 800.0, 25.0)]) is None


def test_the_recommendation_names_what_it_passed_over_for_its_edge():
    edge, roomy, other = point(4, 16, 794.0, 21.5), point(4, 8, 717.0, 13.9), point(3, 8, 700.0, 14.7)
    advice = recommend(SPACE, [edge, roomy, other])
    print(advice.text)
    assert advice.best is roomy and advice.runner_up is other and advice.passed_over is edge
    assert advice.verdict != ON_EDGE
    assert "Not named: 4 instances, delay 5000 µs at concurrency 16" in advice.text
    assert "within 10 % of the 22 ms budget" in advice.text and "(a headroom of 0 would name it)" in advice.text
    assert advice.to_dict()["passed_over"] == edge.key
    assert recommend(SPACE, [roomy, other]).passed_over is None, "nothing passed over: nothing said"
    # another configuration on the edge is passed over, not weighed as the runner-up
    rival, confirmed = point(3, 16, 794.0, 21.5), dataclasses.replace(roomy, repeats=[roomy])
    alone = recommend(SPACE, [rival, confirmed])
    print(alone.text)
    assert alone.runner_up is None and alone.verdict == ONLY and alone.passed_over is rival, alone
    assert "the only configuration inside the SLA with room: clear." in alone.text and "Not named: 3 instances" in alone.text


def test_a_recommendation_on_the_edge_is_never_confirmed_and_names_the_runner_up_too():
    edge, lower = point(4, 16, 794.0, 21.5), point(3, 16, 780.0, 21.0)
    advice = recommend(SPACE, [edge, lower])
    print(advice.text)
    assert advice.best is edge and advice.verdict == ON_EDGE and advice.passed_over is None
    assert advice.named == [edge.choice.label, lower.choice.label]
    assert "on the budget's edge" in advice.text and "no point measured holds the budget with room" in advice.text


def test_a_point_on_the_edge_is_not_measured_again_beside_a_best_with_room():
    edge, roomy = point(4, 16, 794.0, 21.5), point(3, 8, 717.0, 13.9)
    assert [p.key for p in candidates(SPACE, [edge, roomy], top=3)] == [roomy.key]


def _walk(search, p99_at) -> list[float]:
    asked = []
    while (load := search.next()) is not None:
        asked.append(load)
        search.record(point(4, load, 50.0 * load, p99_at(load)))
    return asked


def test_a_load_on_the_edge_sends_either_search_one_load_lower():
    p99_at = {1: 5.0, 2: 6.0, 4: 9.0, 8: 13.9, 16: 21.5}.get  # 16 in flight: inside 22 ms, on its edge
    adaptive = AdaptiveSearch(SPACE, "4 instances", lambda: None)
    asked = _walk(adaptive, p99_at)
    assert SPACE.loads[adaptive.lo] == 8 and asked[-2:] in ([8, 16], [16, 8]), asked
    assert _walk(TwinSearch(SPACE, 16), p99_at) == [16, 8]
    assert _walk(TwinSearch(SPACE, 8), p99_at) == [8, 16], "held at 8, on the edge at 16: the boundary"


def test_a_best_only_on_the_edge_rules_no_configuration_out():
    """Any point with room outranks one on the edge: a configuration that could hold the budget with room is searched
    on however little it answers, where a best with room would have dropped it."""
    edge_best = point(4, 16, 1000.0, 21.5)
    slow = {1: (60.0, 5.0), 2: (110.0, 6.0), 4: (210.0, 8.0), 8: (400.0, 12.0), 16: (450.0, 30.0)}

    def run(best: Point) -> tuple[list[float], str]:
        search = AdaptiveSearch(SPACE, "2 instances", lambda: best)
        asked = []
        while (load := search.next()) is not None:
            asked.append(load)
            rps, p99 = slow[load]
            search.record(point(2, load, rps, p99))
        return asked, search.skipped

    asked, skipped = run(edge_best)
    assert 8 in asked and skipped == "", (asked, skipped)
    asked, skipped = run(point(4, 16, 1000.0, 14.0))  # the same goodput with room: the slow one is dropped
    assert asked == [16] and "loads 1, 2, 4, 8 not measured — at most 450 req/s inside the SLA with room" in skipped, \
        (asked, skipped)


def test_an_edge_best_whose_repeats_disagree_says_both():
    edge = dataclasses.replace(point(4, 16, 794.0, 21.5), marked="its 2 measurements disagree")
    advice = recommend(SPACE, [edge, point(3, 16, 700.0, 21.0)])
    print(advice.text)
    assert "but its 2 measurements disagree; and on the budget's edge — its p99 21.50 ms lies within 10 %" in advice.text
