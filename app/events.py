"""Config changes and other moments worth a marker on the charts, with their before/after numbers."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from statistics import fmean

IMPACT_KEYS = ("infer_rps", "avg_batch", "queue_us", "compute_infer_us", "p99_ms")


@dataclass(frozen=True)
class Event:
    """Something that happened to a model at time t (epoch seconds)."""

    t: float
    model: str
    kind: str
    text: str
    detail: str = ""


@dataclass
class EventLog:
    """A bounded, thread-safe list of events shared by every browser session."""

    limit: int = 500
    clock: callable = time.time
    _events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, model: str, kind: str, text: str, detail: str = "") -> Event:
        """Record an event now and return it."""
        event = Event(self.clock(), model, kind, text, detail)
        with self._lock:
            self._events.append(event)
            del self._events[: -self.limit]
        return event

    def list(self, model: str | None = None, since: float = 0.0) -> list[Event]:
        """Return events (of one model) newer than `since`, oldest first."""
        with self._lock:
            return [e for e in self._events if e.t >= since and (model is None or e.model == model)]


def window_mean(rows: list[dict], key: str, start: float, end: float) -> float | None:
    """Return the mean of rows[key] for start <= t < end, ignoring missing values."""
    values = [r[key] for r in rows if start <= r["t"] < end and r.get(key) is not None]
    return fmean(values) if values else None


def impact(event: Event, rows: list[dict], span_s: float = 10.0, settle_s: float = 2.0) -> dict:
    """Return {key: (before, after)} means over span_s before the event and after it settled."""
    out = {}
    for key in IMPACT_KEYS:
        before = window_mean(rows, key, event.t - span_s, event.t)
        after = window_mean(rows, key, event.t + settle_s, event.t + settle_s + span_s)
        out[key] = (before, after)
    return out
