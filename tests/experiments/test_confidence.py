"""Paired intervals: a difference is called only when its interval excludes zero and it is big enough; the
figures a verdict rests on hold together at 95 %, so comparing many figures does not make chance look real."""
from __future__ import annotations

import random
import statistics

import pytest

from app.experiments.ab import HEADLINE, ABPlan, ABResult, Arm
from app.experiments.confidence import BETTER, HIGHER, LOWER, UNCLEAR, WORSE, family_level, paired, t_cdf, t_quantile
from app.experiments.store import DONE
from loadgen.stats import ALL

# Student-t quantiles from the standard printed table (p, degrees of freedom, value to 3 decimals).
TABLE = [(0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 3, 3.182), (0.975, 10, 2.228), (0.975, 30, 2.042),
         (0.975, 120, 1.980), (0.95, 2, 2.920), (0.99, 1, 31.821), (0.99, 10, 2.764), (0.995, 3, 5.841),
         (0.995, 20, 2.845), (0.9995, 1, 636.619), (0.9995, 5, 6.869), (0.9, 120, 1.289)]


def test_the_interval_is_the_mean_difference_plus_minus_t_times_its_standard_error():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5]
    d = paired("p99_ms", a, b)
    diffs = [y - x for x, y in zip(a, b)]
    half = 3.182 * statistics.stdev(diffs) / 2  # t(0.975, 3) from the table, n = 4
    assert d.diff == pytest.approx(-2.25)
    assert (d.low, d.high) == (pytest.approx(-2.25 - half, rel=1e-4), pytest.approx(-2.25 + half, rel=1e-4))
    assert d.verdict == BETTER and d.n == 4 and d.level == 0.95 and d.level_text == "95 %"  # lower p99 is better


def test_an_interval_of_a_family_of_three_is_at_98_3_percent_and_wider():
    a, b = [10.0, 12.0, 11.0, 13.0], [8.0, 9.5, 9.0, 10.5]
    alone, together = paired("p99_ms", a, b), paired("p99_ms", a, b, family=3)
    # t(1 - 0.05/6, 3) = 4.857 (tables of Bonferroni-t / Dunn's critical values), against 3.182 alone
    assert (together.high - together.low) / (alone.high - alone.low) == pytest.approx(4.857 / 3.182, rel=1e-3)
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


def _identical_arms(rng: random.Random, arms: int, trials: int = 4) -> ABResult:
    """Return a made-up comparison whose arms are the same configuration: every figure is noise around one mean."""
    plan = ABPlan("gpu_sim", tuple(Arm(f"arm{i}", "name: \"gpu_sim\"\n") for i in range(arms)), {}, trials=trials,
                  min_effect=0.0)
    means = {"throughput_rps": 400.0, "goodput_rps": 390.0, "p99_ms": 40.0, "p50_ms": 20.0, "rejected": 3.0}
    results = {a.name: {t: {"client": {ALL: {k: m * rng.gauss(1, 0.05) for k, m in means.items()}}, "server": {}}
                        for t in range(trials)} for a in plan.arms}
    return ABResult(1, plan, results, DONE)


@pytest.mark.parametrize("arms", [2, 3])
def test_identical_configs_are_called_different_at_most_5_percent_of_the_time_over_all_headline_figures(arms):
    """The family-wise rule, measured: 4,000 made-up comparisons of identical arms (seeded, so the counts are
    fixed). A headline difference claimed for any arm is a false alarm. With each interval at 95 % alone the
    alarms run near 1 − 0.95^m (14 % for 3 figures, 26 % for 6); held together, at most 5 % (Bonferroni's bound).
    Four other seeds gave 4.5–4.9 % (2 arms) and 4.4–5.3 % (3 arms) held together, 13.6–14.5 % and 25.0–26.4 %
    alone; a sample of 4,000 wobbles by about ±0.35 %, hence the 6 % ceiling."""
    rng, runs = random.Random(20261201 + arms), 4000
    alone = together = 0
    for _ in range(runs):
        result = _identical_arms(rng, arms)
        base = result.plan.arms[0].name
        claims = [d.clear for a in result.plan.arms[1:] for c, d in result.differences(a.name)
                  if c == ALL and d.key in HEADLINE]
        single = [paired(k, result.values(base, k), result.values(a.name, k), 0.0).clear
                  for a in result.plan.arms[1:] for k in HEADLINE]
        together += any(claims)
        alone += any(single)
        assert len(claims) == len(single) == 3 * (arms - 1)
    print(f"{arms} arms: false alarms {together / runs:.1%} held together, {alone / runs:.1%} at 95 % each")
    assert together / runs <= 0.06 and alone / runs >= 0.10
