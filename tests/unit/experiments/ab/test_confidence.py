"""Paired intervals: a difference is called only when its interval excludes zero and it is big enough; the
figures a verdict rests on hold together at 95 %, so comparing many figures does not make chance look real;
a relative difference of a positive quantity is a ratio, its interval taken on the log scale (never below −100 %).
(How often identical configs are called different, over 4,000 seeded comparisons: bench/study_claims.py's
ab-false-calls.)"""
from __future__ import annotations

import math
import random
import statistics

import pytest

from app.experiments.ab.confidence import (
    ADDITIVE, BETTER, HIGHER, LOWER, RATIO, UNCLEAR, WORSE, family_level, paired, ratio_scale, t_cdf, t_quantile,
)

# Student-t quantiles from the standard printed table (p, degrees of freedom, value to 3 decimals).
TABLE = [(0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 3, 3.182), (0.975, 10, 2.228), (0.975, 30, 2.042),
         (0.975, 120, 1.980), (0.95, 2, 2.920), (0.99, 1, 31.821), (0.99, 10, 2.764), (0.995, 3, 5.841),
         (0.995, 20, 2.845), (0.9995, 1, 636.619), (0.9995, 5, 6.869), (0.9, 120, 1.289)]


def test_an_additive_interval_is_the_mean_difference_plus_minus_t_times_its_standard_error():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5]
    d = paired("rejected", a, b)  # a count that can be 0: B − A, not a ratio
    diffs = [y - x for x, y in zip(a, b)]
    half = 3.182 * statistics.stdev(diffs) / 2  # t(0.975, 3) from the table, n = 4
    assert d.diff == pytest.approx(-2.25) and d.scale == ADDITIVE
    assert (d.low, d.high) == (pytest.approx(-2.25 - half, rel=1e-4), pytest.approx(-2.25 + half, rel=1e-4))
    assert d.relative_interval == (pytest.approx((-2.25 - half) / 11.5, rel=1e-4),
                                   pytest.approx((-2.25 + half) / 11.5, rel=1e-4))
    assert d.verdict == BETTER and d.n == 4 and d.level == 0.95 and d.level_text == "95 %"  # fewer rejections


def test_a_ratio_interval_is_the_geometric_mean_of_the_paired_ratios_with_a_t_interval_on_their_logs():
    """Worked by hand: B / A per trial 8/10, 9.5/12, 9/11, 10.5/13; their logs -0.22314, -0.23361, -0.20067,
    -0.21357: mean -0.21775, standard deviation 0.014023, half width t(0.975, 3) · sd / √4 = 3.182 · 0.007011
    = 0.022310. Back from the logs: e^-0.21775 − 1 = -19.57 %, interval e^-0.24006 − 1 = -21.34 % to
    e^-0.19544 − 1 = -17.75 %."""
    d = paired("p99_ms", [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5])
    print(d)
    assert d.scale == RATIO and d.n == 4 and d.verdict == BETTER
    assert d.relative == pytest.approx(-0.1957, abs=5e-5)
    assert d.relative_interval == (pytest.approx(-0.2134, abs=5e-5), pytest.approx(-0.1775, abs=5e-5))
    assert d.diff == pytest.approx(-2.25) and (d.a_mean, d.b_mean) == (11.5, 9.25)  # the means stay arithmetic
    assert (d.low, d.high) == (pytest.approx(-0.2134 * 11.5, abs=1e-3), pytest.approx(-0.1775 * 11.5, abs=1e-3))


def test_a_relative_difference_of_a_positive_quantity_never_goes_below_minus_100_percent():
    """The issue's '−178.7 % to +238.5 %': p99 of A 10, 100, 10, 100 ms against B 1, 200, 2, 50 ms. B − A over A's
    mean reaches below −100 % (a negative latency); the log-scale interval cannot, whatever the spread."""
    a, b = [10.0, 100.0, 10.0, 100.0], [1.0, 200.0, 2.0, 50.0]
    additive, ratio = paired("rejected", a, b), paired("p99_ms", a, b)
    print(additive.relative_interval, ratio.relative_interval)
    assert additive.relative_interval[0] < -1.0  # what the old interval said of a latency
    assert -1.0 < ratio.relative_interval[0] < ratio.relative < ratio.relative_interval[1]
    rng, lowest = random.Random(25), 0.0
    for _ in range(2000):  # wild spreads, few trials, wide families: the lower end stays above −100 %
        n = rng.choice((2, 3, 4, 8))
        a = [rng.lognormvariate(0, 1.5) for _ in range(n)]
        b = [x * rng.lognormvariate(rng.uniform(-3, 3), 2.0) for x in a]
        for key in ("p99_ms", "throughput_rps", "goodput_rps", "avg_batch", "queue_us"):
            d = paired(key, a, b, family=rng.choice((1, 3, 6)))
            lowest = min(lowest, d.relative_interval[0])
            # ≥, not >: a lower end of e^-40 − 1 (2 trials at 99.2 %) is -1 to the last bit of a float, never below
            assert d.scale == RATIO and -1.0 <= d.relative_interval[0] <= d.relative_interval[1], (key, a, b, d)
    print(f"lowest relative interval end over 10,000 draws: {lowest:+.6%}")


def test_figures_that_can_be_zero_keep_the_additive_interval():
    assert [k for k in ("p50_ms", "p99_ms", "throughput_rps", "goodput_rps", "avg_batch", "queue_us", "compute_us",
                        "exec_rps", "rejected", "fail_rps", "queue_share", "failed_share") if ratio_scale(k)] == [
        "p50_ms", "p99_ms", "throughput_rps", "goodput_rps", "avg_batch", "queue_us", "compute_us", "exec_rps"]
    assert paired("fail_rps", [0.0, 1.0, 0.0], [2.0, 3.0, 2.5]).scale == ADDITIVE
    assert paired("queue_share", [0.2, 0.3, 0.25], [0.1, 0.15, 0.1]).scale == ADDITIVE
    # goodput is a rate of work, but a trial in which nothing met the SLA has no ratio: B − A it is
    starved = paired("goodput_rps", [0.0, 10.0, 12.0], [50.0, 60.0, 55.0])
    assert starved.scale == ADDITIVE and starved.relative == pytest.approx(6.5)  # B − A 50, 50, 43 over A's 7.33
    assert paired("goodput_rps", [5.0, 10.0, 12.0], [50.0, 60.0, 55.0]).scale == RATIO


def test_an_interval_of_a_family_of_three_is_at_98_3_percent_and_wider():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5]
    alone, together = paired("rejected", a, b), paired("rejected", a, b, family=3)
    # t(1 - 0.05/6, 3) = 4.857 (tables of Bonferroni-t / Dunn's critical values), against 3.182 alone
    assert (together.high - together.low) / (alone.high - alone.low) == pytest.approx(4.857 / 3.182, rel=1e-3)
    ratio_alone, ratio_together = paired("p99_ms", a, b), paired("p99_ms", a, b, family=3)

    def log_width(d):
        return math.log1p(d.relative_interval[1]) - math.log1p(d.relative_interval[0])
    assert log_width(ratio_together) / log_width(ratio_alone) == pytest.approx(4.857 / 3.182, rel=1e-3)
    assert together.level == pytest.approx(1 - 0.05 / 3) and together.level_text == "98.3 %" and together.family == 3
    assert family_level(1) == 0.95 and family_level(6) == pytest.approx(1 - 0.05 / 6)
    with pytest.raises(ValueError):
        family_level(0)


def test_directions_come_from_the_metric_table():
    assert paired("throughput_rps", [100, 101, 99], [90, 91, 89]).verdict == WORSE
    assert paired("exec_rps", [100, 101, 99], [120, 119, 121]).verdict == HIGHER  # neutral metric: no better/worse
    # a 20 ms queue delay at light load batches more and is slower: the smaller batch without it is no fault
    assert paired("avg_batch", [4.1, 4.0, 4.2], [1.8, 1.8, 1.9]).verdict == LOWER


def test_an_interval_across_zero_or_a_tiny_difference_is_no_clear_difference():
    assert paired("p99_ms", [10, 14, 9, 15], [12, 10, 13, 11]).verdict == UNCLEAR
    steady = paired("throughput_rps", [100.0, 100.0, 100.0], [99.5, 99.5, 99.6])  # tight, but half a percent
    assert steady.high < 0 and steady.verdict == UNCLEAR


def test_fewer_than_two_pairs_say_nothing_and_missing_trials_are_skipped():
    assert paired("p99_ms", [10.0], [5.0]) is None
    assert paired("p99_ms", [10.0, None, 11.0], [5.0, 6.0, 5.5]).n == 2


@pytest.mark.parametrize(("p", "df", "value"), TABLE)
def test_t_quantiles_match_the_printed_table(p, df, value):
    assert t_quantile(p, df) == pytest.approx(value, abs=6e-4)
    assert t_cdf(value, df) == pytest.approx(p, abs=1e-4) and t_cdf(-value, df) == pytest.approx(1 - p, abs=1e-4)


def test_t_quantiles_refuse_what_they_cannot_give_and_approach_the_normal():
    for p, df in ((0.975, 0), (0.4, 3), (1.0, 3)):
        with pytest.raises(ValueError):
            t_quantile(p, df)
    assert t_quantile(0.975, 100_000) == pytest.approx(1.960, abs=1e-3)  # the normal's 97.5 % point
    assert all(t_quantile(0.975, k) > t_quantile(0.975, k + 1) for k in range(1, 60))
