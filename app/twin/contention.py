"""How much executions slow down when several instances run at once, fitted from windows at several counts.

Model: an execution needs a share φ of one shared device (gpu_sim's lock around its compute; cores for a CPU
model, φ ≈ 1/cores). With k executions in flight on average, each takes max(1, φ·k) times its time alone — exact
when the instances are saturated, an underestimate in between. The fit picks the φ under which every window,
deflated by its slowdown, agrees on one time per batch size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ASSUMED_SHARE = 0.5  # the lab's machine: 2 cores, a model execution keeps one busy; gpu_sim's lock ≈ half its time
ASSUMED_RANGE = (0.25, 1.0)
GRID = np.round(np.arange(0.01, 1.0001, 0.01), 2)
TOLERANCE = 0.02  # a φ fits when its relative rms misfit is within 2 % of the best one


@dataclass(frozen=True)
class Contention:
    """The device share φ of an execution, the range the evidence allows, and where it came from."""

    share: float
    low: float
    high: float
    measured: bool
    note: str

    def slowdown(self, busy: float, share: float | None = None) -> float:
        """Return how many times longer an execution takes with `busy` executions in flight."""
        return max(1.0, (self.share if share is None else share) * busy)


def fit_contention(points: list[tuple[int, float, int, float]], prior: float | None = None,
                   prior_note: str = "") -> Contention:
    """Fit φ to (size, busy, executions, mean µs) per window and size; a prior (a known cost model) breaks ties."""
    sizes = sorted({p[0] for p in points})
    size_index = np.array([sizes.index(p[0]) for p in points])
    busy = np.array([p[1] for p in points], float)
    count = np.array([p[2] for p in points], float)
    log_mean = np.log(np.array([p[3] for p in points], float))
    rms = []
    for share in GRID:
        log_slow = np.log(np.maximum(1.0, share * busy))
        deflated = log_mean - log_slow
        # The weighted mean per size of the deflated logs is the best single time per size under this φ.
        centre = np.bincount(size_index, count * deflated) / np.bincount(size_index, count)
        rms.append(math.sqrt(float(np.sum(count * (deflated - centre[size_index]) ** 2) / count.sum())))
    rms = np.array(rms)
    fits = GRID[rms <= rms.min() + TOLERANCE]
    if len(fits) == len(GRID):  # every φ explains the windows equally: they cannot tell
        if prior is not None:
            return Contention(prior, prior * 0.8, min(1.0, prior * 1.25), False, prior_note)
        return Contention(ASSUMED_SHARE, *ASSUMED_RANGE, False,
                          f"assumed: an execution needs {ASSUMED_SHARE:.0%} of the shared device or cores (the "
                          "windows seen cannot tell; measure another instance count to fit it)")
    low, high = float(fits.min()), float(fits.max())
    share = prior if prior is not None and low <= prior <= high else round((low + high) / 2, 2)
    counts = sorted({round(b, 1) for b in busy})
    return Contention(share, low, high, True,
                      f"fitted on windows with {', '.join(f'{b:g}' for b in counts)} executions in flight: "
                      f"an execution needs {share:.0%} of the shared device (the windows allow {low:.0%}-{high:.0%})")
