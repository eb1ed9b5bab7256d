"""bench/vs_model_analyzer rates a choice that differs from Model Analyzer's by Model Analyzer's own measurements, and
says whether a sweep measured Model Analyzer's choice at all."""
from __future__ import annotations

import bench.vs_model_analyzer as vma
from bench.vs_model_analyzer import STABILITY, as_model_analyzer_saw_it, measured_ma_choice, same_within_noise

MA = {"choice": {"key": "i3-d0", "label": "3 instances, delay 0 µs"},
      "figures": {"throughput_rps": 800.0, "p99_ms": 21.0, "load": 16.0},
      "by_choice": {"i3-d0": {"throughput_rps": 800.0, "p99_ms": 21.0, "load": 16.0},
                    "i2-d5000": {"throughput_rps": 760.0, "p99_ms": 15.0, "load": 8.0},
                    "default": {"throughput_rps": 300.0, "p99_ms": 12.0, "load": 2.0}}}


def test_a_differing_choice_is_rated_by_what_model_analyzer_measured_of_it():
    seen = as_model_analyzer_saw_it(MA, {"key": "i2-d5000", "label": "2 instances, delay 5000 µs"})
    assert seen["throughput_rps"] == 760.0 and seen["load"] == 8.0
    assert abs(seen["shortfall"] - 0.05) < 1e-9, seen


def test_the_starting_config_is_model_analyzers_default_and_an_unmeasured_one_says_so():
    assert as_model_analyzer_saw_it(MA, {"key": "i1-d500-start", "label": "x"})["throughput_rps"] == 300.0
    assert as_model_analyzer_saw_it(MA, {"key": "i4-d0", "label": "x"}) == {"throughput_rps": None, "shortfall": None}
    assert as_model_analyzer_saw_it(MA, None) is None


def test_a_sweep_measured_model_analyzers_choice_or_left_it_out():
    assert measured_ma_choice(MA, {"measured": ["i2-d5000", "i3-d0"]}) is True
    assert measured_ma_choice(MA, {"measured": ["i2-d5000", "i4-d0"]}) is False
    default = {**MA, "choice": {"key": "default", "label": "the served config"}}
    assert measured_ma_choice(default, {"measured": ["i1-d500-start"]}) is True
    assert measured_ma_choice({**MA, "choice": None}, {"measured": ["i3-d0"]}) is None


def test_a_choice_is_the_same_within_noise_when_model_analyzer_measured_it_inside_its_stability_band():
    """760 against 800 is 5 % below, inside perf_analyzer's 10 %; 300 is not; one it never measured in the budget is
    not; no choice of Model Analyzer's leaves nothing to compare."""
    def arm(key):
        return {"choice": {"key": key, "label": key}}
    assert same_within_noise(MA, arm("i3-d0")) is True
    assert same_within_noise(MA, arm("i2-d5000")) is True
    assert same_within_noise(MA, arm("i1-d500-start")) is False
    assert same_within_noise(MA, arm("i4-d0")) is False
    assert same_within_noise({**MA, "choice": None}, arm("i3-d0")) is None
    outside = {**MA, "by_choice": {**MA["by_choice"], "i2-d5000": {"throughput_rps": 800.0 * (1 - STABILITY) - 1,
                                                                  "p99_ms": 15.0, "load": 8.0}}}
    assert same_within_noise(outside, arm("i2-d5000")) is False


def referee(ma_rounds, lab_rounds, lab_key="i2-d5000", lab_load=8.0):
    """Return a referee's result for Model Analyzer's choice (i3-d0 at 16) and the lab's, as (throughput, p99)."""
    ma = {"key": "i3-d0", "load": 16.0, "arms": ["model_analyzer"],
          "rounds": [{"throughput_rps": t, "p99_ms": p} for t, p in ma_rounds]}
    if (lab_key, lab_load) == ("i3-d0", 16.0):
        ma["arms"].append("lab_twin")
        return {"points": [ma]}
    lab = {"key": lab_key, "load": lab_load, "arms": ["lab_twin"],
           "rounds": [{"throughput_rps": t, "p99_ms": p} for t, p in lab_rounds]}
    return {"points": [ma, lab]}


def test_the_referee_counts_a_choice_as_good_as_model_analyzers_by_perf_analyzers_repeated_measurements():
    from bench.vs_model_analyzer import referee_verdict

    edge = [(800, 21.5), (795, 22.4), (802, 21.9)]  # over the 22 ms budget once: the budget's coin toss
    steady = [(700, 14.0), (696, 14.5), (705, 13.8)]
    verdict = referee_verdict(referee(edge, steady), 22.0, "lab_twin")
    assert verdict["held"] == 3 and verdict["ma_held"] == 2 and verdict["as_good_as_ma"] is True, verdict
    inside = [(800, 21.0), (796, 21.2), (804, 20.9)]  # inside every time: 12 % more is a better choice
    verdict = referee_verdict(referee(inside, steady), 22.0, "lab_twin")
    assert verdict["ma_held"] == 3 and abs(verdict["shortfall"] - (1 - 700.33 / 800)) < 1e-3, verdict
    assert verdict["as_good_as_ma"] is False
    close = [(760, 14.0), (755, 14.5), (770, 13.8)]  # both inside every time, 5 % apart: within the band
    assert referee_verdict(referee(inside, close), 22.0, "lab_twin")["as_good_as_ma"] is True
    over = [(830, 23.0), (820, 21.0), (828, 21.5)]  # the lab's over the budget once, Model Analyzer's never
    assert referee_verdict(referee(inside, over), 22.0, "lab_twin")["as_good_as_ma"] is False
    # both over the budget every time (2026-12-06 23:00: 3/5000 µs and 4/5000 µs at 16 in flight), 0.8 % apart: as good
    always_over = [(798, 22.5), (800, 23.0), (803, 22.7)]
    also_over = [(792, 24.0), (794, 22.2), (794, 22.2)]
    verdict = referee_verdict(referee(always_over, also_over, "i4-d5000", 16.0), 22.0, "lab_twin")
    assert verdict["held"] == verdict["ma_held"] == 0 and verdict["as_good_as_ma"] is True, verdict
    assert referee_verdict(referee(always_over, [(700, 23.0)] * 3), 22.0, "lab_twin")["as_good_as_ma"] is False
    same = referee_verdict(referee(edge, None, "i3-d0", 16.0), 22.0, "lab_twin")
    assert same["as_good_as_ma"] is True and same["shortfall"] == 0, same
    assert referee_verdict(referee(edge, steady), 22.0, "lab") is None  # that arm chose nothing


def test_the_referee_measures_each_chosen_point_once_whoever_chose_it():
    from bench.vs_model_analyzer import referee_points

    def arm(key, load, label="x"):
        return {"choice": {"key": key, "label": label}, "figures": {"load": load}}
    result = {"model_analyzer": arm("default", 4.0), "lab": arm("i1-d500-start", 4.0), "lab_twin": arm("i2-d0", 8.0)}
    points = referee_points(result)
    assert [(p["key"], p["load"], p["arms"]) for p in points] == [
        ("start", 4.0, ["model_analyzer", "lab"]), ("i2-d0", 8.0, ["lab_twin"])], points
    assert referee_points({**result, "lab": {"choice": None}}) == referee_points(
        {k: v for k, v in result.items() if k != "lab"})


def test_a_shortfall_is_said_in_words_without_a_sign_to_decode():
    assert vma._below(0.095) == "9.5% below" and vma._below(-0.224) == "22.4% above" and vma._below(0.0) == "0.0% below"
