"""Latency samples: exact for short windows, a fixed-size log histogram for whole runs."""
from __future__ import annotations

import math
from array import array

import numpy as np

QUANTILES = (50, 90, 95, 99)
_LOW_S = 1e-6  # values below one microsecond share the first bin
_STEP = 1.001  # bin width: 0.1 % of the value
_INV_LOG_STEP = 1.0 / math.log(_STEP)
_BINS = int(math.log(1e3 / _LOW_S) * _INV_LOG_STEP) + 2  # up to 1,000 s


class Samples:
    """Every value kept: exact percentiles for a second's worth of requests."""

    def __init__(self) -> None:
        self.values = array("d")

    def add(self, seconds: float) -> None:
        """Keep one value."""
        self.values.append(seconds)

    def merge(self, other: Samples) -> None:
        """Keep another container's values too."""
        self.values.extend(other.values)

    def __len__(self) -> int:
        return len(self.values)

    def quantiles_s(self) -> list[float]:
        """Return the QUANTILES in seconds."""
        return list(np.percentile(np.frombuffer(self.values, dtype=np.float64), QUANTILES))

    def mean_s(self) -> float:
        """Return the mean in seconds."""
        return float(np.mean(np.frombuffer(self.values, dtype=np.float64)))


class Histogram:
    """Counts in bins 0.1 % wide from 1 us to 1,000 s: constant memory however long the run."""

    def __init__(self) -> None:
        self.counts = np.zeros(_BINS, dtype=np.int64)
        self.total = 0.0
        self.n = 0

    def add(self, seconds: float) -> None:
        """Count one value."""
        index = int(math.log(seconds / _LOW_S) * _INV_LOG_STEP) + 1 if seconds > _LOW_S else 0
        self.counts[min(index, _BINS - 1)] += 1
        self.total += seconds
        self.n += 1

    def merge(self, other: Histogram) -> None:
        """Add another histogram's counts."""
        self.counts += other.counts
        self.total += other.total
        self.n += other.n

    def __len__(self) -> int:
        return self.n

    def quantiles_s(self) -> list[float]:
        """Return the QUANTILES in seconds (each bin's geometric middle: within 0.05 %)."""
        cumulative = np.cumsum(self.counts)
        out = []
        for q in QUANTILES:
            index = int(np.searchsorted(cumulative, q / 100.0 * self.n))
            out.append(0.0 if index == 0 else _LOW_S * _STEP ** (index - 0.5))
        return out

    def mean_s(self) -> float:
        """Return the exact mean in seconds."""
        return self.total / self.n
