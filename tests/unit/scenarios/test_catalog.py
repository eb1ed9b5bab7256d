"""The catalog's rules on figures written by hand: a scenario's operating point follows the chapter's worked example and
is the sweep's rule (goodput first), not a second one."""
from __future__ import annotations

from app.experiments.sweep.points import Point
from app.experiments.sweep.recommend import operating_point as sweep_point
from app.experiments.sweep.space import Choice, SearchSpace
from app.scenarios.base import PhaseFigures
from app.scenarios.claims import phase_operating_point
from app.timeline.figures import Figures
from app.timeline.sides import client_rows


def test_the_operating_point_follows_the_chapters_worked_example():
    # 5.12: instances 2/4/8 gave (1000/s, 20 ms), (1800/s, 28 ms), (1900/s, 55 ms); with p99 < 30 ms the answer is 4.
    figures = {f"{n} instances": PhaseFigures(client=client_rows({"all": {"throughput_rps": rps, "p99_ms": p99}}))
               for n, rps, p99 in ((2, 1000, 20), (4, 1800, 28), (8, 1900, 55))}
    assert phase_operating_point(figures, 30.0) == "4 instances"
    assert phase_operating_point(figures, 60.0) == "8 instances"
    assert phase_operating_point(figures, 10.0) is None


def test_a_scenario_and_a_sweep_name_the_same_operating_point_by_one_rule():
    """Goodput first (answers inside their SLA), throughput only breaking ties — the sweep's rule, not a second one."""
    rows = {"fast but late": (1900.0, 1500.0, 25.0), "slower, in time": (1800.0, 1700.0, 28.0),
            "over budget": (2500.0, 2400.0, 45.0)}
    figures = {name: PhaseFigures(client=client_rows({"all": {"throughput_rps": rps, "goodput_rps": good,
                                                               "p99_ms": p99}}))
               for name, (rps, good, p99) in rows.items()}
    space = SearchSpace("m", instances=(1, 2, 3), loads=(8.0,), p99_budget_ms=30.0, p99_headroom=0.0)
    points = [Point(Choice(instances=i + 1), 8.0, figures=Figures.from_dict({"client": {"all": {
                  "throughput_rps": rps, "goodput_rps": good, "p99_ms": p99}}}))
              for i, (rps, good, p99) in enumerate(rows.values())]
    picked = sweep_point(space, points)
    assert phase_operating_point(figures, 30.0) == "slower, in time", figures
    assert picked is points[1], [(p.choice, p.goodput) for p in points]
    # A sweep's default headroom (10 %) passes over 28 ms under 30 — on the budget's edge — for 25 ms; the chapter's
    # rule is the budget alone.
    assert sweep_point(SearchSpace("m", instances=(1, 2, 3), loads=(8.0,), p99_budget_ms=30.0), points) is points[0]
