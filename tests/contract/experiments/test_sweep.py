"""A sweep on the real server: a config offered twice is measured once, under the starting config's name; the best
points are measured again, interleaved (A B A B), before the recommendation names one with its margin; resumed
afterwards it measures nothing again. (Its control flow — refusals, cancel and resume, interruptions, what it gives
back — on a FakeLab: tests/unit/experiments/sweep/test_sweeper.py; the operating point the cost model implies:
bench/study_claims.py's sweep.)"""
from __future__ import annotations

import pytest

from app.experiments.sweep.space import SearchSpace
from app.experiments.sweep.sweeper import SweepOptions, load_points, run_sweep, with_repeats
from app.store.database import INTERRUPTED

MODEL = "gpu_sim"


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def test_a_config_offered_twice_is_measured_once_and_the_recommendation_rests_on_interleaved_repeats(lab):
    """gpu_sim serves 1 instance with a 500 µs delay: '1 instance, delay 500 µs' and the default are that one config,
    measured once under the starting config's name. Both configurations are then measured twice more, interleaved,
    and the recommendation states its margin over the other and how often each was measured. A resume afterwards
    measures nothing again."""
    space = SearchSpace(model=MODEL, instances=(1, 2), delays_us=(500,), include_default=True, loads=(4,),
                        p99_budget_ms=1000.0, adaptive=False)
    options = SweepOptions(max_windows=2, recheck_top=2, recheck_rounds=2)
    result = run_sweep(lab, space, label="offered twice", options=options)
    runs = lab.runs(study_id=result.study_id)
    first = [e.point for e in runs if e.kind == "point"]
    again = [e.point for e in runs if e.kind == "repeat"]
    study = lab.study(result.study_id)
    advice = result.recommendation
    print(f"{result.wall_s:.1f} s", first, again, study.result.get("rechecked"), advice and advice.text)
    assert result.status == "done", result.note
    assert first == ["i2-d500@4", "i1-d500-start@4"], "the starting config was measured twice or under another name"
    assert result.points[-1].choice.label == "1 instance, delay 500 µs (serving at start)"
    rechecked = study.result["rechecked"]  # the first pass's best, and the other if it was within the noise
    assert rechecked and set(rechecked) <= set(first), study.result
    assert again == rechecked * 2, "the repeats were not interleaved (A B A B)"
    assert {p.key: len(p.repeats) for p in result.points} == {k: 2 * (k in rechecked) for k in first}
    assert advice is not None and advice.best is result.best and advice.runner_up is not None, advice
    assert advice.runner_up.choice != advice.best.choice and advice.margin is not None and advice.margin >= 0
    times = 3 if advice.best.key in rechecked else 1  # 1: the repeats dethroned the first pass's best
    assert f"measured {times}×" in advice.text and " above " in advice.text, advice.text
    assert advice.runner_up.choice.label in advice.text and " %" in advice.text, advice.text
    assert advice.verdict in (("clear", "within the spread", "repeats disagree") if times == 3 else ("measured once",))
    assert study.result["recommendation"]["text"] == advice.text
    assert [p.key for p in with_repeats(lab, result.study_id, load_points(lab,
                                                                                      result.study_id))] == first

    lab.update_study(result.study_id, status=INTERRUPTED)
    resumed = run_sweep(lab, study_id=result.study_id)
    assert [e.id for e in lab.runs(study_id=result.study_id)] == [e.id for e in runs], "measured again"
    assert resumed.recommendation.text == advice.text
