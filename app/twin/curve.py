"""Execution time as a function of batch size, t(b) = a + c·b^k, fitted to the sizes a server has run."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXPONENTS = np.round(np.arange(0.05, 2.51, 0.05), 2)  # k from near-flat (launch-bound) to super-linear (pattern C)
OCCAM = 0.01  # a curve is kept when a line misses the sizes by 1.5 × its misfit + 1 % (relative rms) or more
ONE_SIZE_EXPONENT = 0.5  # with one size seen, others are assumed to grow as its square root


@dataclass(frozen=True)
class Curve:
    """t(b) = a + c·b^k in µs, the sizes it rests on and how far the fit misses them (weighted, relative)."""

    a: float
    c: float
    k: float
    sizes: tuple[int, ...]
    rel_rms: float
    note: str

    def at(self, size: int) -> float:
        """Return the fitted execution time of one batch of this size."""
        return self.a + self.c * size ** self.k


def _solve(x: np.ndarray, m: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Return (a, c, misfit) minimising the weighted relative error, with a >= 0 and c >= 0."""
    u = np.sqrt(w) / m  # relative residuals: a 10 µs miss matters more on a 100 µs batch than on a 10 ms one
    rows, target = np.column_stack([u, u * x]), np.sqrt(w)
    candidates = []
    (a, c), *_ = np.linalg.lstsq(rows, target, rcond=None)
    if a >= 0 and c >= 0:
        candidates.append((a, c))
    candidates.append((0.0, max(0.0, float(target @ rows[:, 1] / (rows[:, 1] @ rows[:, 1])))))
    candidates.append((max(0.0, float(target @ rows[:, 0] / (rows[:, 0] @ rows[:, 0]))), 0.0))
    scored = [(float(np.sum((rows @ np.array([a, c]) - target) ** 2)), a, c) for a, c in candidates]
    misfit, a, c = min(scored)
    return float(a), float(c), misfit


def fit_curve(points: dict[int, tuple[float, float]]) -> Curve:
    """Fit t(b) to {size: (mean µs, weight)}; weights are executions, so a size seen twice counts little."""
    if not points:
        raise ValueError("no batch size to fit: the window holds no executions")
    sizes = tuple(sorted(points))
    b = np.array(sizes, float)
    m = np.array([points[s][0] for s in sizes], float)
    w = np.array([points[s][1] for s in sizes], float)
    if len(sizes) == 1:
        return Curve(0.0, m[0] / b[0] ** ONE_SIZE_EXPONENT, ONE_SIZE_EXPONENT, sizes, float("nan"),
                     f"one batch size seen ({sizes[0]}): other sizes assumed to grow as size^{ONE_SIZE_EXPONENT}")
    if len(sizes) == 2:
        a, c, misfit = _solve(b, m, w)
        return Curve(a, c, 1.0, sizes, 0.0, f"two batch sizes seen ({sizes[0]}, {sizes[1]}): a straight line "
                                               "through them; sizes outside are extrapolated")
    fits = [_solve(b ** k, m, w) + (float(k),) for k in EXPONENTS]
    a, c, misfit, k = min(fits, key=lambda fit: fit[2])
    line = next(fit for fit in fits if fit[3] == 1.0)
    # Occam: a free exponent must beat a straight line clearly, or noise in a few sizes bends the extrapolation.
    if np.sqrt(line[2] / w.sum()) <= 1.5 * np.sqrt(misfit / w.sum()) + OCCAM:
        a, c, misfit, k = line
    rel_rms = float(np.sqrt(misfit / w.sum()))
    return Curve(a, c, k, sizes, rel_rms, f"fitted on {len(sizes)} batch sizes ({sizes[0]}-{sizes[-1]}): "
                                          f"{a:.0f} + {c:.0f}·size^{k:g} µs, misses them by {rel_rms:.1%} (rms)")
