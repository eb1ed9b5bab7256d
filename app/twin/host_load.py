"""How busy the server host's CPUs will be: a share per answer and per execution, fitted to what windows showed.

Where the host, not the server, is the limit, its CPUs do the clients' work, the HTTP frontend's and the backend's:
a share of the host per request a second and another per execution a second (a batch of eight costs the frontend
eight requests and the backend one execution). A config that batches less asks more of the host at the same rate:
mlp at 4,500 req/s kept the host 0.57-0.77 busy with max_queue_delay 2000 µs (batches of 8) and 0.74-0.89 without
(batches of 2), 2026-12-07. Past about HOST_TIPPING busy a host-bound tail tips over in some windows and not in
others (mlp and text_len: 24 windows under 0.75 busy read p99s of 2.1-8.7 ms; 12 at 0.75-0.99 read 6.5-390 ms, 9
of them over 10 ms). A probe at one instance cannot show what more instances add (their threads and processes on
the same CPUs: text_len at 4,200 req/s, 0.71-0.74 busy at one instance, 0.96-0.99 at three).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

HOST_TIPPING = 0.75  # the host's CPUs this busy: a host-bound tail tips over in some windows (see above)
MIN_WINDOWS = 4  # fewer windows with the host's reading than this, and no fit: three shares need a window to spare


@dataclass(frozen=True)
class HostLoad:
    """The host's CPU utilisation (0-1) as idle + per_request · answers/s + per_execution · executions/s."""

    idle: float
    per_request: float
    per_execution: float
    windows: int  # the windows it was fitted to
    rms: float  # how far it misses their readings (0-1, root mean square)

    def at(self, requests_per_s: float, executions_per_s: float) -> float:
        """Return the utilisation these rates would keep the host at (held at 1: busier is not measurable)."""
        return min(1.0, self.idle + self.per_request * requests_per_s + self.per_execution * executions_per_s)

    @property
    def note(self) -> str:
        """Return the fit in words."""
        return (f"the host's CPUs {self.idle:.0%} busy idle, {self.per_request * 1e3:.2%} more per 1,000 answers/s "
                f"and {self.per_execution * 1e3:.2%} per 1,000 executions/s (fitted to {self.windows} windows, "
                f"missing them by {self.rms:.0%})")


def fit_host_load(points: Iterable[tuple[float, float, float]]) -> HostLoad | None:
    """Fit to (answers/s, executions/s, utilisation 0-1) per window, each share at least 0; None with fewer than
    MIN_WINDOWS points or none that varies."""
    rows = [(r, e, h) for r, e, h in points if r is not None and e is not None and h is not None]
    if len(rows) < MIN_WINDOWS:
        return None
    x = np.array([[1.0, r, e] for r, e, _ in rows])
    y = np.array([h for _, _, h in rows])
    best = None
    # every subset of the terms holding a share per answer or per execution: the least misfit with no share below 0
    for keep in ((0, 1, 2), (0, 1), (0, 2), (1, 2), (1,), (2,)):
        coef, *_ = np.linalg.lstsq(x[:, keep], y, rcond=None)
        if (coef < 0).any():
            continue
        full = np.zeros(3)
        full[list(keep)] = coef
        misfit = float(np.sqrt(np.mean((x @ full - y) ** 2)))
        if best is None or misfit < best[0] - 1e-12:
            best = (misfit, full)
    if best is None or not (best[1][1] > 0 or best[1][2] > 0):
        return None
    misfit, (idle, per_request, per_execution) = best
    return HostLoad(float(idle), float(per_request), float(per_execution), len(rows),
                    misfit if math.isfinite(misfit) else 1.0)
