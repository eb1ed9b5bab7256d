"""Predicted against measured: what the twin expected of a change before it was applied, beside what the window after
it measured — kept with the change (a stored run of kind 'prediction'), shown on the page that made it."""
from __future__ import annotations

from dataclasses import dataclass

from app.twin.predict import Interval, Prediction

KIND = "prediction"
SHOWN = ("throughput_rps", "p50_ms", "p99_ms", "mean_batch")


def predicted_dict(prediction: Prediction) -> dict:
    """Return what a check keeps of a prediction: each shown figure's value and interval, and how sure it was."""
    return {**{k: {"value": getattr(prediction, k).value, "low": getattr(prediction, k).low,
                   "high": getattr(prediction, k).high} for k in SHOWN},
            "confidence": prediction.confidence, "lacks": list(prediction.lacks)}


def measured_dict(figures) -> dict:
    """Return the same figures measured in a window (app.timeline.figures.Figures)."""
    row = figures.row("all")
    return {"throughput_rps": row.throughput_rps, "p50_ms": row.p50_ms, "p99_ms": row.p99_ms,
            "mean_batch": figures.server.avg_batch, "samples": row.latency_n, "t0": figures.t0, "t1": figures.t1}


@dataclass(frozen=True)
class PredictionCheck:
    """One change's prediction and, once its window after has run, its measurement."""

    run_id: int
    change: str
    t: float
    predicted: dict
    measured: dict | None  # None while the change has not shown long enough

    def interval(self, key: str) -> Interval:
        """Return a predicted figure."""
        p = self.predicted[key]
        return Interval(p["value"], p["low"], p["high"])

    def error(self, key: str) -> float | None:
        """Return (predicted - measured) / measured of a figure, None when either is missing."""
        if not self.measured or not self.measured.get(key):
            return None
        return (self.predicted[key]["value"] - self.measured[key]) / self.measured[key]

    def inside(self, key: str) -> bool | None:
        """Return whether the measurement fell inside the predicted interval (None: not measured)."""
        if not self.measured or self.measured.get(key) is None:
            return None
        p = self.predicted[key]
        return p["low"] <= self.measured[key] <= p["high"]
