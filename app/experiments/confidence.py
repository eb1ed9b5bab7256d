"""How sure a difference is: paired confidence intervals over repeated, interleaved trials.

An A/B comparison runs every arm once per trial under the same seeded traffic, in alternating order,
so slow drift of a shared machine hits every arm alike. For each metric the per-trial differences
B − A are paired; their mean and a Student-t interval (n − 1 degrees of freedom) say how large the
difference is and how sure. A difference is called only when its interval excludes zero and it is at
least `min_effect` of A's mean: with identical traffic a figure such as throughput can differ by a
request or two with almost no spread, which is real but means nothing.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from app.metrics.catalog import metric

# Two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30 (standard table values).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
BETTER, WORSE, HIGHER, LOWER, UNCLEAR = "better", "worse", "higher", "lower", "no clear difference"


def t975(df: int) -> float:
    """Return the 97.5 % quantile of Student's t with df degrees of freedom (normal beyond 30)."""
    if df < 1:
        raise ValueError("a confidence interval needs at least two trials")
    return _T975[df - 1] if df <= len(_T975) else 1.960


@dataclass(frozen=True)
class Difference:
    """B − A for one metric over paired trials."""

    key: str
    a_mean: float
    b_mean: float
    diff: float  # mean of B − A
    low: float  # 95 % interval of the mean difference
    high: float
    n: int
    verdict: str  # better / worse (a metric with a direction), higher / lower (neutral), or no clear difference

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


def paired(key: str, a: list[float | None], b: list[float | None], min_effect: float = 0.03) -> Difference | None:
    """Return the paired difference of one metric, None with fewer than two complete pairs."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    n = len(pairs)
    if n < 2:
        return None
    diffs = [y - x for x, y in pairs]
    mean = statistics.fmean(diffs)
    half = t975(n - 1) * statistics.stdev(diffs) / math.sqrt(n)
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
    return Difference(key, a_mean, b_mean, mean, low, high, n, verdict)
