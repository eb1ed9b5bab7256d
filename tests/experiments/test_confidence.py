"""Paired intervals: a difference is called only when its interval excludes zero and it is big enough."""
from __future__ import annotations

import math
import statistics

import pytest

from app.experiments.confidence import BETTER, HIGHER, UNCLEAR, WORSE, paired, t975


def test_the_interval_is_the_mean_difference_plus_minus_t_times_its_standard_error():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5]
    d = paired("p99_ms", a, b)
    diffs = [y - x for x, y in zip(a, b)]
    half = 3.182 * statistics.stdev(diffs) / 2  # t(0.975, 3) from the table, n = 4
    assert d.diff == pytest.approx(-2.25) and (d.low, d.high) == (pytest.approx(-2.25 - half), pytest.approx(-2.25 + half))
    assert d.verdict == BETTER and d.n == 4  # lower p99 is better


def test_directions_come_from_the_metric_table():
    assert paired("throughput_rps", [100, 101, 99], [90, 91, 89]).verdict == WORSE
    assert paired("exec_rps", [100, 101, 99], [120, 119, 121]).verdict == HIGHER  # neutral metric: no better/worse


def test_an_interval_across_zero_or_a_tiny_difference_is_no_clear_difference():
    assert paired("p99_ms", [10, 14, 9, 15], [12, 10, 13, 11]).verdict == UNCLEAR
    steady = paired("throughput_rps", [100.0, 100.0, 100.0], [99.5, 99.5, 99.6])  # tight, but half a percent
    assert steady.high < 0 and steady.verdict == UNCLEAR


def test_fewer_than_two_pairs_say_nothing_and_missing_trials_are_skipped():
    assert paired("p99_ms", [10.0], [5.0]) is None
    assert paired("p99_ms", [10.0, None, 11.0], [5.0, 6.0, 5.5]).n == 2


def test_the_t_table_and_beyond_it():
    assert t975(1) == 12.706 and t975(30) == 2.042 and t975(500) == 1.960
    with pytest.raises(ValueError):
        t975(0)
    assert all(t975(k) > t975(k + 1) for k in range(1, 30)) and not math.isnan(t975(10))
