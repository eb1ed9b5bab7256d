"""The live view's data, computed once per tick for every browser session that shows it.

A live page redraws every 2 s (5 s when nothing moves). Without sharing, each open session — the operator's
tabs and every demo viewer — would recompute the same window figures, chart datasets and marker comparisons.
`frame()` builds a `LiveFrame` at most once per (lab, model, window, view, tick of TICK_S) and hands the same
object to every session asking within that tick; a session asking while another builds it waits for that
build instead of starting its own. No Streamlit here: pages only render what a frame holds.
"""
from __future__ import annotations

import math
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from app.lab.ports import LabPort
from app.timeline.figures import Figures
from app.timeline.markers import Marker
from app.traffic.form import load_targets
from app.ui.live import live_charts as charts
from loadgen.rate_trace.rate_trace import TraceError
from loadgen.rate_trace.wall_clock import is_rate_trace, played_points
from loadgen.spec import Mode
from loadgen.stats import ALL

TICK_S = 1.0  # sessions asking within the same second share one frame
TILE_S = 10  # the tiles' window: long enough for a p99 at a few hundred requests per second
KEEP = 64  # frames kept (distinct models, windows, paused views)


@dataclass(frozen=True)
class LiveFrame:
    """Everything one live view draws at one moment."""

    model: str
    window_s: int
    now: float
    up: bool
    error: str | None
    running: bool
    targeted: bool
    targets: tuple[str, ...]
    tile: Figures
    specs: dict[str, dict]  # chart name -> Vega-Lite spec with its data
    batch_hist: dict[int, int]
    markers: list[Marker]
    impacts: list[tuple[Marker, dict]] = field(default_factory=list)  # the last 6 markers' before/after
    sla_ms: float | None = None  # the tightest SLA of the traffic to this model (the latency chart's line)


class FrameCache:
    """Frames keyed by what they show and the tick they were built in; thread-safe, bounded."""

    def __init__(self, keep: int = KEEP, tick_s: float = TICK_S) -> None:
        self.keep, self.tick_s = keep, tick_s
        self.builds = 0  # how many frames were computed (the benchmark and tests read it)
        self._frames: OrderedDict[tuple, object] = OrderedDict()
        self._building: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple, now: float, build):
        """Return the frame of key for now's tick, building it with build() when no session has yet."""
        full = (*key, math.floor(now / self.tick_s))
        while True:
            with self._lock:
                if full in self._frames:
                    self._frames.move_to_end(full)
                    return self._frames[full]
                waiting = self._building.get(full)
                if waiting is None:
                    self._building[full] = threading.Event()
                    break
            waiting.wait(30.0)  # another session is building this very frame
        try:
            frame = build()
            with self._lock:
                self.builds += 1
                self._frames[full] = frame
                while len(self._frames) > self.keep:
                    self._frames.popitem(last=False)
            return frame
        finally:
            with self._lock:
                self._building.pop(full).set()


_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # lab -> its cache, gone with the lab
_caches_lock = threading.Lock()


def cache_of(lab: LabPort) -> FrameCache:
    """Return the frame cache of one lab (one per process in practice)."""
    with _caches_lock:
        return _caches.setdefault(lab, FrameCache())


def frame(lab: LabPort, model: str, window_s: int, per_class: bool, paused_at: float | None = None,
          now: float | None = None, audience: bool = False) -> LiveFrame:
    """Return the live frame of a model: shared by every session asking in the same tick (now: the clock).
    audience: the demo's frame — its charts in the presenter's words and one tall latency chart of the clients'."""
    now = paused_at if paused_at is not None else (time.time() if now is None else now)
    key = ("live", model, window_s, per_class, paused_at is not None, audience, *state_key(lab))
    return cache_of(lab).get(key, now, lambda: _build(lab, model, window_s, per_class, now, paused_at is not None,
                                                      audience))


def state_key(lab: LabPort) -> tuple:
    """What makes a frame of this tick stale when it changes: a run started or stopped, a marker added or closed."""
    return lab.traffic().running, lab.traffic().runs, lab.timeline_version()


def trace_line(spec, started_at: float | None, since: float, now: float) -> list[tuple[float, float]]:
    """Return the played rate of a rate-trace run as (epoch s, req/s) step points inside [since, now] (empty for
    any other load, before it sends, or when its trace file can no longer be read)."""
    if spec is None or started_at is None or spec.mode is not Mode.OPEN or not is_rate_trace(spec.arrival):
        return []
    try:
        return played_points(spec.arrival, spec.rate, started_at, since, now)
    except (TraceError, ValueError):
        return []


def _build(lab: LabPort, model: str, window_s: int, per_class: bool, now: float, zoom: bool,
           audience: bool = False) -> LiveFrame:
    since = now - window_s
    msnap = lab.server_view(model=model, window_s=window_s, now=now)
    lsnap = lab.traffic_snapshot(window_s=window_s + (time.time() - now))
    targets = tuple(sorted(load_targets(lsnap.spec)))
    targeted = model in targets
    lrows = [r for r in lsnap.timeline if since <= r["t"] <= now and model in r.get("models", ())]  # earlier runs too
    markers = [m for m in lab.markers(model, since) if m.t <= now]
    mrows = msnap.timeline
    sla = min((c.sla_ms for c in lsnap.spec.classes), default=None) if targeted and lsnap.spec else None
    idle = charts.WAITING if lsnap.running and targeted else charts.IDLE
    specs = {
        "throughput": charts.throughput(mrows, lrows, markers, zoom, audience,
                                        trace_line(lsnap.spec, lsnap.started_at, since, now) if targeted else ()),
        "latency": (charts.demo_latency(lrows, markers, sla, idle) if audience
                    else charts.latency(mrows, lrows, markers, sla, zoom, idle_text=idle)),
        "breakdown": charts.breakdown(mrows, markers, zoom, audience),
        "batches": charts.batch_histogram(msnap.batch_hist, f"last {window_s // 60} min", audience),
        "pending": charts.pending(mrows, markers, zoom, audience),
    }
    if per_class or len({r.get("cls") for r in lrows} - {ALL}) > 1:
        specs["per_class"] = charts.per_class(lrows, markers, zoom)
    return LiveFrame(
        model=model, window_s=window_s, now=now, up=msnap.up, error=msnap.error,
        running=lsnap.running, targeted=targeted, targets=targets,
        tile=lab.measure(model, now - TILE_S, now), specs=specs, batch_hist=msnap.batch_hist,
        markers=markers, impacts=[] if audience else [(m, lab.impact(m, model)) for m in markers[-6:]], sla_ms=sla,
    )

