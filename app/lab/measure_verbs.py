"""The Measure port: window figures from counter differences and merged latencies, meters, the fleet.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_metrics, _load, _endpoint, _fleet)."""
from __future__ import annotations

import math
from dataclasses import replace

from app.timeline.meter import MeasuredWindow, Meter
from app.metrics.poller import MetricsSnapshot
from app.timeline.figures import Figures, impact, measure
from app.timeline.markers import Marker
from app.traffic.form import load_targets, target_rate
from loadgen.stats import ALL


class MeasureVerbs:
    """Window figures from counter differences and merged latencies, meters, the fleet."""

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
        """Return the window figures of [t0, t1); client figures from the load runs that sent to the model."""
        spec = self._load.spec
        figures = measure(self._metrics, self._load, model, t0, t1, include_held)
        if ALL in figures.client and model in load_targets(spec):  # what the current run asks to send
            row = replace(figures.row(), target_rps=target_rate(spec, (t0, t1), self._load.last_started_at))
            figures = replace(figures, client={**figures.client, ALL: row})  # a new value: Figures stays frozen
        return figures

    def impact(self, marker: Marker, model: str, span_s: float = 10.0) -> dict:
        """Return a model's before/after figures around a change, requests held by its reload left out."""
        return impact(marker, lambda t0, t1: self.measure(model, t0, t1, include_held=False), span_s)

    def server_view(self, model: str | None = None, window_s: float = 120.0,
                    now: float | None = None) -> MetricsSnapshot:
        """Return the poller's per-interval rows, batch sizes and state over the last window_s."""
        return self._metrics.snapshot(model=model, window_s=window_s, now=now)

    def meter(self, model: str, slas_s: dict[str, float] | None = None) -> Meter:
        """Return a meter of the model's windows with exact edges (a context manager: it stops listening)."""
        return Meter(self._load, self._endpoint, model, slas_s)

    def recorded_windows(self, model: str, t0: float, t1: float) -> list[MeasuredWindow]:
        """Return [t0, t1) as one-second windows from t0 on (client buckets with every latency, the counter
        differences of the polls that ended in each second), from what the poller and the load generator kept."""
        out = []
        for k in range(math.floor(t1 - t0 + 1e-9)):
            a = t0 + k
            buckets = self._load.buckets(a, a + 1.0, model)[0]
            delta, batches = self._metrics.delta(model, a, a + 1.0)
            out.append(MeasuredWindow(a, a + 1.0, buckets, delta, batches))
        return out

    def fleet_window(self, model: str, window_s: float) -> dict | None:
        """Return every replica's figures of the last window_s from the fleet's Prometheus (None: no fleet)."""
        return self._fleet.window(model, int(window_s)) if self._fleet is not None else None

    def fleet_url(self) -> str | None:
        """Return the fleet's Prometheus, None when the lab reads none."""
        return self._fleet.base_url if self._fleet is not None else None
