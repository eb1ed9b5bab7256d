"""Whole-run latency histograms: quantiles within their 0.1 % bins of the exact ones."""
from __future__ import annotations

import numpy as np
import pytest

from loadgen.histogram import Histogram, Samples


def test_histogram_quantiles_match_exact_ones():
    rng = np.random.default_rng(0)
    values = rng.lognormal(mean=-5, sigma=1.0, size=50_000)  # ~7 ms median, long tail
    hist, exact = Histogram(), Samples()
    for v in values:
        hist.add(float(v))
        exact.add(float(v))
    assert hist.quantiles_s() == pytest.approx(exact.quantiles_s(), rel=2e-3)
    assert hist.mean_s() == pytest.approx(values.mean()) and len(hist) == 50_000
    tiny = Histogram()
    tiny.add(0.0)
    tiny.add(-1e-7)  # a send a hair before its slot
    assert tiny.quantiles_s() == [0.0] * 4
