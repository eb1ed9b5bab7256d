"""The change-marker log: config changes, restarts and traffic starts/stops drawn on every chart.

A reload or restart is a band from when it was asked for to when the server served again;
requests in flight during a band are "held": counted, but left out of before/after comparisons.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

ALL_MODELS = "*"  # a marker about the whole server (a restart)


@dataclass(frozen=True)
class Marker:
    """Something that happened to a model at time t (epoch s); a band lasts until `end`."""

    id: int
    t: float
    model: str
    kind: str  # apply, undo, restart, traffic
    text: str
    detail: str = ""
    band: bool = False  # a reload or restart: serving paused from t to end
    end: float | None = None  # None while a band is under way (and for instant markers)
    ok: bool = True

    @property
    def settled(self) -> float:
        """Return when the marked change took effect (a band's end, else t)."""
        return self.end if self.end is not None else self.t


@dataclass
class MarkerLog:
    """A bounded, thread-safe list of markers shared by every browser session, with stable ids."""

    limit: int = 500
    clock: Callable[[], float] = time.time
    _markers: list[Marker] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    version: int = 0  # grows with every marker added, finished or restored: views built before are stale

    def add(self, model: str, kind: str, text: str, detail: str = "") -> Marker:
        """Record an instant marker now and return it."""
        return self._append(Marker(next(self._ids), self.clock(), model, kind, text, detail))

    def begin(self, model: str, kind: str, text: str) -> Marker:
        """Open a band now (a reload or restart under way) and return it."""
        return self._append(Marker(next(self._ids), self.clock(), model, kind, text, band=True))

    def finish(self, marker: Marker, detail: str = "", ok: bool = True, text: str | None = None) -> Marker:
        """Close a band now; a failed change keeps its band (requests still waited) with ok=False."""
        with self._lock:
            done = replace(marker, end=self.clock(), detail=detail, ok=ok, text=text or marker.text)
            self._markers = [done if m.id == marker.id else m for m in self._markers]
            self.version += 1
            return done

    def restore(self, markers: list[Marker]) -> int:
        """Put markers of an earlier dashboard process first; ids go on after the highest. Return how many."""
        with self._lock:
            known = {m.id for m in self._markers}
            kept = [m for m in sorted(markers, key=lambda m: m.id) if m.id not in known]
            self._markers = (kept + self._markers)[-self.limit:]
            top = max((m.id for m in self._markers), default=0)
            self._ids = itertools.count(top + 1)
            self.version += 1
        return len(kept)

    def list(self, model: str | None = None, since: float = 0.0) -> list[Marker]:
        """Return markers (of one model, and the whole server's) that end at or after `since`, oldest first."""
        with self._lock:
            return [m for m in self._markers if (m.end or m.t) >= since
                    and (model is None or m.model in (model, ALL_MODELS))]

    def find(self, marker_id: int | None) -> Marker | None:
        """Return the marker with this id, None when there is none (any more)."""
        with self._lock:
            return next((m for m in self._markers if m.id == marker_id), None)

    def held(self, model: str, sent: float, done: float) -> bool:
        """Return True when a request [sent, done] of this model was in flight during a reload or restart."""
        with self._lock:
            return any(m.band and m.model in (model, ALL_MODELS) and m.t <= done and (m.end is None or m.end >= sent)
                       for m in self._markers)

    def reloading(self, model: str) -> bool:
        """Return True while a reload or restart of the model (or the server) is under way."""
        with self._lock:
            return any(m.band and m.end is None and m.model in (model, ALL_MODELS) for m in self._markers)

    def last_change(self, model: str, kinds: tuple[str, ...] = ("apply", "undo", "restart")) -> Marker | None:
        """Return the newest config change (or restart) of a model."""
        with self._lock:
            for m in reversed(self._markers):
                if m.kind in kinds and m.model in (model, ALL_MODELS):
                    return m
        return None

    def _append(self, marker: Marker) -> Marker:
        with self._lock:
            self._markers.append(marker)
            del self._markers[: -self.limit]
            self.version += 1
        return marker
