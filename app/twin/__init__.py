"""The twin: a calibrated discrete-event model of Triton's dynamic batcher and instances, to try a config first."""
from app.twin.batcher import Batcher, Policy, Unsupported, batcher_of
from app.twin.calibrate import calibrate_from_stats, client_overhead_from, merge, window_of
from app.twin.calibration import Calibration, SizeCost, Window
from app.twin.costs import Costs
from app.twin.load import Arrivals, Load, ClassShare
from app.twin.predict import ClassPrediction, Interval, Prediction, capacity_bound, predict, saturation
from app.twin.simulated import RunFigures, Run, LatencySamples
from app.twin.scheduler import simulate

__all__ = [
    "Arrivals", "Batcher", "Calibration", "ClassPrediction", "Costs", "RunFigures", "Interval", "Load", "Policy",
    "Prediction", "Run", "LatencySamples", "SizeCost", "ClassShare", "Unsupported", "Window", "batcher_of",
    "calibrate_from_stats", "capacity_bound", "client_overhead_from", "merge", "predict", "saturation", "simulate",
    "window_of",
]
