"""bench/twin_accuracy's summary, on made-up rows: the goals' shares, the measurement against itself, and how often a
measured p99 lies inside the interval predicted for it."""
from __future__ import annotations

from bench.twin_accuracy import summary


def _load(low: float, value: float, high: float, *measured: float) -> dict:
    first, *again = measured
    return {"predicted": {"p99_ms": {"low": low, "value": value, "high": high}},
            "measured": {"p99_ms": first}, "measured_again": {"p99_ms": again[0]} if again else None,
            "p99_error": (value - first) / first,
            "p99_error_again": (value - again[0]) / again[0] if again else None,
            "p99_repeat_error": (again[0] - first) / first if again else None}


def test_the_summary_counts_every_measurement_against_the_goal_itself_and_the_interval():
    rows = [{"model": "m", "saturation": {"error": 0.05}, "loads": [_load(8.0, 10.0, 13.5, 10.0, 14.0),
                                                                    _load(4.0, 5.0, 6.0, 7.0)]},
            {"model": "m", "saturation": {"error": -0.2}, "loads": [_load(1.0, 2.0, 3.0, 2.0)]}]
    got = summary(rows)["m"]
    print(got)
    assert got["saturation_within_10pct"] == "1/2"
    assert got["p99_within_20pct"] == "2/4", "10 against 10 and 2 against 2 inside; 10 against 14 and 5 against 7 not"
    assert got["p99_repeat_within_20pct"] == "0/1"  # 14 against 10
    assert got["p99_inside_interval"] == "2/4", "10 and 2 inside; 14 above 13.5, 7 above 6"
    rows[0]["loads"][1]["beyond_reach"] = True  # 5 against 7: the twin said it lies beyond what it saw
    assert summary(rows)["m"]["p99_within_20pct_not_beyond"] == "2/3"


def test_a_saturation_measured_twice_counts_both_and_itself():
    """Predicted 1,000 against 1,050 (5 % off) and 1,200 (17 % off); 1,200 against 1,050 is 14 % off itself."""
    rows = [{"model": "m", "loads": [], "saturation": {"error": (1000 - 1050) / 1050,
                                                       "error_again": (1000 - 1200) / 1200,
                                                       "repeat_error": (1200 - 1050) / 1050}}]
    got = summary(rows)["m"]
    assert got["saturation_within_10pct"] == "1/2" and got["saturation_repeat_within_10pct"] == "0/1", got
    assert summary([{"model": "m", "loads": [], "saturation": {"error": 0.0}}])["m"][
        "saturation_repeat_within_10pct"] is None


def test_a_prediction_within_the_goal_of_the_span_of_a_points_two_measurements_counts_as_near_both():
    """Measured 10 and 14 ms: 11 lies between (near both), 16.5 within 20 % of the higher, 7.9 under 80 % of the
    lower; a point measured once is not counted. Saturations 1,050 and 1,200: 1,000 within 10 % of the lower."""
    rows = [{"model": "m", "saturation": {"error": (1000 - 1050) / 1050, "error_again": (1000 - 1200) / 1200},
             "loads": [_load(8.0, 11.0, 13.0, 10.0, 14.0), _load(8.0, 16.5, 18.0, 10.0, 14.0),
                       _load(6.0, 7.9, 9.0, 10.0, 14.0), _load(4.0, 5.0, 6.0, 7.0)]}]
    got = summary(rows)["m"]
    assert got["p99_within_20pct_of_both"] == "2/3", got
    assert got["saturation_within_10pct_of_both"] == "1/1", got
    assert got["p99_within_20pct"] == "2/7", "against each measurement alone: 11 of 10, 16.5 of 14"
    assert summary([{"model": "m", "loads": [], "saturation": {"error": 0.0}}])["m"][
        "saturation_within_10pct_of_both"] is None


def test_the_p99s_measured_with_the_host_calm_and_busy_are_counted_apart():
    """Each p99 error goes with the host's CPU of its own window: 10 against 10 at 0.5 busy (within), 10 against 14
    at 0.9 (not), 5 against 7 at 0.6 (not); a window without the host's reading counts in neither."""
    rows = [{"model": "m", "saturation": {"error": 0.0},
             "loads": [_load(8.0, 10.0, 13.5, 10.0, 14.0), _load(4.0, 5.0, 6.0, 7.0), _load(1.0, 2.0, 3.0, 2.0)]}]
    rows[0]["loads"][0]["measured"]["host_cpu"] = 0.5
    rows[0]["loads"][0]["measured_again"]["host_cpu"] = 0.9
    rows[0]["loads"][1]["measured"]["host_cpu"] = 0.6
    got = summary(rows)["m"]
    assert got["p99_within_20pct_host_calm"] == "1/2", got
    assert got["p99_within_20pct_host_busy"] == "0/1", got
    assert got["p99_within_20pct"] == "2/4", "the third point, 2 against 2, has no host reading: counted once overall"
