"""bench/vs_model_analyzer rates a choice that differs from Model Analyzer's by Model Analyzer's own measurements, and
says whether a sweep measured Model Analyzer's choice at all."""
from __future__ import annotations

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
