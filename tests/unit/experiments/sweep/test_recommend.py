"""What a sweep recommends, on made-up points: the noise its windows show, who is measured again, repeats pooled
and marked when they disagree, and the margin the recommendation states."""
from __future__ import annotations

import numpy as np
import pytest

from app.timeline.meter import merged
from app.experiments.sweep.recommend import (CLEAR, DISAGREE, ONCE, ONLY, TIED, candidates, disagreement, operating_point,
                                       pooled, recommend, spread, spread_of)
from app.experiments.sweep.space import Choice, SearchSpace
from app.store.database import DONE, Experiment, ExperimentStore
from app.experiments.sweep.sweeper import REPEAT, Point, with_repeats
from tests.unit.experiments.samples import T0, window

SPACE = SearchSpace(instances=(1, 2, 4), delays_us=(0,), loads=(8,), p99_budget_ms=50.0, adaptive=False)


def measured(instances: int, rates: list[float], t0: float = T0, load: float = 8) -> Point:
    """Return a point of one-second windows answering `rates` requests each (5 ms median: all inside the SLA)."""
    rng = np.random.default_rng(int(t0) % 1000 + instances)
    windows = [window(t0 + i, 1.0, rate, 5.0, rng) for i, rate in enumerate(rates)]
    whole = merged(windows)
    return Point(Choice(instances=instances, delay_us=0), load, DONE, True, 0.01, whole.figures(),
                 [w.to_dict() for w in windows], t0=whole.t0, t1=whole.t1)


def again(point: Point, rates: list[float]) -> Point:
    """Return a re-measurement of the point, an hour later."""
    return measured(point.choice.instances, rates, t0=(point.t0 or T0) + 3600, load=point.load)


def test_a_points_noise_is_half_the_range_of_its_windows_goodput():
    point = measured(1, [96, 100, 104])
    print("goodput", point.goodput, "spread", spread(point))
    assert spread_of(point.windows) == pytest.approx(0.04)  # (104 − 96) / 2 / 100
    assert spread(point) == pytest.approx(0.04)
    assert spread_of(point.windows[:1]) is None, "one window shows no spread"


def test_the_candidates_are_the_best_and_the_configurations_within_its_noise_at_most_top():
    best = measured(4, [1000, 1040, 960])  # ±4 %
    near = measured(2, [980, 990, 1000])  # 2 % below the best: inside its noise
    far = measured(1, [800, 800, 800])  # 25 % below
    lower_load_of_best = measured(4, [500, 500, 500], load=4)  # the best configuration's other point: not a rival
    points = [far, near, lower_load_of_best, best]
    picked = candidates(SPACE, points, top=3)
    print([p.key for p in picked])
    assert [p.key for p in picked] == [best.key, near.key]
    assert [p.key for p in candidates(SPACE, points, top=1)] == [best.key], "the best is always measured again"
    assert candidates(SPACE, points, top=0) == [] and candidates(SearchSpace(p99_budget_ms=1.0), points, 3) == []


def test_repeats_pool_every_answer_over_the_seconds_measured_and_agreeing_ones_are_not_marked():
    first = measured(2, [98, 100, 102])  # 300 answers in 3 s
    point = pooled(first, [again(first, [100, 102, 104])])  # 306 answers in 3 s, an hour later
    print(point.note, point.goodput, point.throughput)
    assert point.throughput == pytest.approx(606 / 6), "pooled over 6 s measured, not over the hour between"
    assert point.goodput == pytest.approx(606 / 6)
    assert disagreement(point) == pytest.approx(2 / 101) and spread(point) == pytest.approx(0.02)
    assert not point.marked and "measured 2×" in point.note and "agree" in point.note
    assert first.goodput == pytest.approx(100), "the first measurement is left as it was"


@pytest.mark.parametrize("runner_rates, words", [
    ([3000, 3030, 3060], "1 instance, delay 0 µs may be as good"),  # inside the marked point's range
    ([2000, 2000, 2000], "even its lowest measurement is 59 % above 1 instance, delay 0 µs"),  # below all of it
])
def test_a_repeat_that_disagrees_by_more_than_the_spread_is_marked_and_not_named_alone(runner_rates, words):
    best = measured(2, [4000, 4100, 4200])  # ±2.4 %
    repeat = again(best, [3150, 3180, 3220])  # the same config 25 % lower (±1.1 %): the bands do not overlap
    runner = measured(1, runner_rates)
    points = [pooled(best, [repeat]), pooled(runner, [again(runner, runner_rates)])]
    advice = recommend(SPACE, points)
    print(advice.text, "|", points[0].note)
    assert points[0].marked and "disagree" in points[0].marked and not points[1].marked
    assert "4,100, 3,183" not in points[0].note and "4,100 and 3,183 req/s" in points[0].note
    assert "disagree" in points[0].note and "disagree" in points[0].caution()
    assert advice.best.key == best.key and advice.verdict == DISAGREE
    assert advice.named == [best.choice.label, runner.choice.label], "a marked point is never named alone"
    assert "not named alone" in advice.text and "measured 2×" in advice.text and words in advice.text


def test_repeats_within_their_bands_agree_even_when_further_apart_than_one_spread():
    """±3 % each: 4.9 % apart is inside the 6 % the two bands allow."""
    first = measured(2, [359, 370, 381])
    point = pooled(first, [again(first, [341, 352, 363])])
    print(point.note)
    assert not point.marked and "they agree" in point.note


@pytest.mark.parametrize("runner_rates, verdict, words, seen", [
    ([1000, 1010, 1020], TIED, "within the spread — 2 instances, delay 0 µs is as good and cheaper", 10 / 1010),
    ([880, 900, 920], CLEAR, "clear", 20 / 900),
])
def test_the_recommendation_states_its_margin_and_whether_it_exceeds_the_spread(runner_rates, verdict, words, seen):
    best = pooled(measured(4, [1000, 1020, 1040]), [measured(4, [1010, 1020, 1030], T0 + 100)])  # ±2 %
    runner = pooled(measured(2, runner_rates), [measured(2, runner_rates, T0 + 100)])
    advice = recommend(SPACE, [runner, best])
    margin = (best.goodput - runner.goodput) / runner.goodput
    print(f"margin {margin:.3f}", advice.text)
    assert advice.best.key == best.key and advice.runner_up.key == runner.key
    assert advice.verdict == verdict and words in advice.text, advice.text
    assert advice.margin == pytest.approx(margin) and advice.spreads == pytest.approx((20 / 1020, seen))
    assert f"±{20 / 1020:.1%}".replace("%", " %") in advice.text, "the spread it rests on is stated"
    assert "4 instances, delay 0 µs at concurrency 8" in advice.text and "measured 2×" in advice.text
    assert advice.to_dict()["named"] == advice.named and len(advice.named) == (1 if verdict == CLEAR else 2)


def test_the_operating_point_rests_on_every_measurement():
    """A first pass that flattered A is corrected by its repeat: pooled, B has more goodput."""
    a, b = measured(4, [1100, 1100, 1100]), measured(2, [1040, 1050, 1060])
    assert operating_point(SPACE, [a, b]).key == a.key
    points = [pooled(a, [again(a, [900, 900, 900])]), pooled(b, [again(b, [1040, 1050, 1060])])]
    advice = recommend(SPACE, points)
    print(advice.text)
    assert operating_point(SPACE, points).key == b.key == advice.best.key


def test_a_point_measured_once_or_alone_says_so():
    once = recommend(SPACE, [measured(2, [1000, 1000, 1000]), measured(1, [500, 500, 500])])
    assert once.verdict == ONCE and "measured once" in once.text, once.text
    alone = recommend(SPACE, [pooled(measured(2, [1000, 1010]), [measured(2, [1005, 1000], T0 + 100)])])
    assert alone.verdict == ONLY and alone.runner_up is None and alone.named == ["2 instances, delay 0 µs"]
    assert recommend(SearchSpace(p99_budget_ms=1.0), [measured(2, [1000, 1000])]) is None


def test_stored_repeats_are_pooled_back_in_and_one_that_cannot_be_read_is_named_not_raised(tmp_path):
    store = ExperimentStore(tmp_path / "experiments.sqlite")
    first = measured(2, [98, 100, 102])
    repeat = again(first, [100, 102, 104])
    for point_name, windows in ((first.key, repeat.windows), ("no load here", repeat.windows)):
        store.add_run(Experiment("a repeat", "gpu_sim", "", repeat.t0, repeat.t1, kind=REPEAT, study_id=7, point=point_name,
                             client=repeat.figures.client_dicts(), server=repeat.figures.server.to_dict(),
                             windows=windows,
                             outcome={"stable": True, "change": 0.01, "repeat": 1}))
    problems: list[str] = []
    points = with_repeats(store, 7, [first], problems)
    print(points[0].note, problems)
    assert len(points[0].repeats) == 1 and points[0].goodput == pytest.approx(606 / 6)
    assert len(problems) == 1 and "'no load here'" in problems[0] and "cannot be read" in problems[0]
    assert with_repeats(store, 8, [first]) == [first], "another study's repeats are not this one's"
