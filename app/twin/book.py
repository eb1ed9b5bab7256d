"""What the twin has learnt of each model: its recent statistics windows at each instance count, merged on demand.

Execution costs per batch size do not depend on the batching settings, only on how many instances contend for the
device: so a window stays evidence after a delay or a preferred size changed, and windows at several instance counts
together fit the contention share (app/twin/contention.py) instead of assuming it.
"""
from __future__ import annotations

import threading
from collections import deque

from app.twin.calibrate import merge
from app.twin.calibration import Calibration

KEPT = 7  # windows kept per (model, instance count): the newest, so a changed model is relearnt in about a minute;
# a probe of a host-bound model notes 7 (4 closed loops, the top one again, 2 open), and none of them is dropped
EVERY_S = 10.0  # a model's windows are noted at most this often: predictions asked meanwhile stay cached


class TwinBook:
    """Calibrations of the models a lab has seen executing, by instance count; thread-safe."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._seen: dict[str, dict[int, deque[Calibration]]] = {}
        self._lock = threading.Lock()
        self._noted: dict[str, float] = {}  # model -> when its last window was noted
        self.version = 0  # grows with every window noted: predictions cached before it are stale

    def due(self, model: str, now: float, every_s: float = EVERY_S) -> bool:
        """Return True when a new window of the model is worth noting (none for every_s)."""
        with self._lock:
            return now - self._noted.get(model, float("-inf")) >= every_s

    def note(self, model: str, instances: int, calibration: Calibration, now: float = 0.0) -> None:
        """Keep one window's calibration of a model served with `instances` instances (noted at now)."""
        with self._lock:
            counts = self._seen.setdefault(model, {})
            counts.setdefault(instances, deque(maxlen=self._kept)).append(calibration)
            self._noted[model] = now
            self.version += 1

    def calibration(self, model: str) -> Calibration | None:
        """Return everything known of a model as one calibration, None before any window was noted."""
        with self._lock:
            kept = [c for windows in self._seen.get(model, {}).values() for c in windows]
        return merge(kept) if kept else None

    def instance_counts(self, model: str) -> tuple[int, ...]:
        """Return the instance counts a model was seen executing at."""
        with self._lock:
            return tuple(sorted(self._seen.get(model, {})))

    def forget(self, model: str) -> None:
        """Forget a model (its folder changed under the lab: another model under the same name)."""
        with self._lock:
            self._seen.pop(model, None)
            self.version += 1
