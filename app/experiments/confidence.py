"""How sure a difference is: paired confidence intervals over repeated, interleaved trials.

An A/B comparison runs every arm once per trial under the same seeded traffic, in alternating order,
so slow drift of a shared machine hits every arm alike. For each metric the per-trial differences
B − A are paired; their mean and a Student-t interval (n − 1 degrees of freedom) say how large the
difference is and how sure. A difference is called only when its interval excludes zero and it is at
least `min_effect` of A's mean: with identical traffic a figure such as throughput can differ by a
request or two with almost no spread, which is real but means nothing.

Many figures are compared at once, so some interval would exclude zero by chance alone: three figures
at 95 % each miss together about 14 % of the time. The figures a verdict rests on form one family whose
intervals hold together at 95 % (Bonferroni: each at 1 − 5 %/m for m figures, `family_level`); the
other figures keep 95 % each and are shown as leads, not conclusions.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

from app.metrics.catalog import metric

LEVEL = 0.95  # the confidence of one interval, and of a family of intervals taken together
BETTER, WORSE, HIGHER, LOWER, UNCLEAR = "better", "worse", "higher", "lower", "no clear difference"


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """Return the regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """Return P(T ≤ t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=512)
def t_quantile(p: float, df: int) -> float:
    """Return the p-quantile of Student's t with df degrees of freedom, for 0.5 ≤ p < 1."""
    if df < 1:
        raise ValueError("a confidence interval needs at least two trials")
    if not 0.5 <= p < 1.0:
        raise ValueError(f"a quantile between 0.5 and 1 is asked for, not {p}")
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def family_level(size: int, level: float = LEVEL) -> float:
    """Return the level each of `size` intervals needs for all of them to hold together at `level`."""
    if size < 1:
        raise ValueError("a family has at least one member")
    return 1.0 - (1.0 - level) / size


@dataclass(frozen=True)
class Difference:
    """B − A for one metric over paired trials."""

    key: str
    a_mean: float
    b_mean: float
    diff: float  # mean of B − A
    low: float  # the interval of the mean difference, at `level`
    high: float
    n: int
    verdict: str  # better / worse (a metric with a direction), higher / lower (neutral), or no clear difference
    level: float = LEVEL  # this interval's own confidence
    family: int = 1  # how many intervals hold together at LEVEL with it (1: it stands alone)

    @property
    def relative(self) -> float | None:
        """Return the mean difference as a fraction of A's mean."""
        return self.diff / self.a_mean if self.a_mean else None

    @property
    def relative_interval(self) -> tuple[float, float] | None:
        """Return the interval as fractions of A's mean."""
        return (self.low / self.a_mean, self.high / self.a_mean) if self.a_mean else None

    @property
    def clear(self) -> bool:
        return self.verdict != UNCLEAR

    @property
    def level_text(self) -> str:
        """Return the interval's level as shown beside it, e.g. '95 %' or '98.3 %'."""
        return f"{self.level * 100:.3g} %"


def paired(key: str, a: list[float | None], b: list[float | None], min_effect: float = 0.03,
           family: int = 1) -> Difference | None:
    """Return the paired difference of one metric, None with fewer than two complete pairs.

    family: the number of intervals that must hold together at 95 % with this one (its level is
    family_level(family)); 1 for an interval that stands alone.
    """
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    n = len(pairs)
    if n < 2:
        return None
    level = family_level(family)
    diffs = [y - x for x, y in pairs]
    mean = statistics.fmean(diffs)
    half = t_quantile(1.0 - (1.0 - level) / 2.0, n - 1) * statistics.stdev(diffs) / math.sqrt(n)
    a_mean = statistics.fmean(x for x, _ in pairs)
    b_mean = statistics.fmean(y for _, y in pairs)
    low, high = mean - half, mean + half
    big = abs(mean) >= min_effect * abs(a_mean) if a_mean else mean != 0
    verdict = UNCLEAR
    if big and (low > 0 or high < 0):
        lower = metric(key).lower_is_better
        if lower is None:
            verdict = HIGHER if mean > 0 else LOWER
        else:
            verdict = BETTER if (mean < 0) == lower else WORSE
    return Difference(key, a_mean, b_mean, mean, low, high, n, verdict, level, family)
