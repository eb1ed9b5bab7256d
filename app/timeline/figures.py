"""Window figures: everything the lab says about a model over [t0, t1), computed once.

Server figures are differences of cumulative counters (summed per scrape interval, so a reset
inside the window is survived); client figures merge every latency sample of the window, so a
window p99 is the true p99, with its sample count. Tiles, charts' markers, diagnosis and
experiments all read this, typed on each side (app.timeline.sides).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.metrics.catalog import BY_KEY, CLIENT, MIN_SAMPLES, metric
from app.timeline.sides import ClientFigures, ServerFigures, client_rows, number
from loadgen.behind import behind as behind_share
from loadgen.stats import ALL, latest_error


@dataclass(frozen=True)
class Figures:
    """THE figures of one window of one model — live tiles, markers, diagnosis, sweep points, A/B trials, scenario
    phases and the store all read a window through this type: client figures per traffic class (and ALL) with their
    sample counts, and the server's figures from counter differences. Stored as {'t0', 't1', 'seconds', 'client',
    'server', 'reset'} (to_dict); from_dict reads that form back, and the older ones without some of its keys."""

    model: str = ""
    t0: float = 0.0
    t1: float = 0.0
    server: ServerFigures = field(default_factory=ServerFigures)
    client: dict[str, ClientFigures] = field(default_factory=dict)  # traffic class (and 'all') -> figures
    reset: bool = False  # the server's counters restarted inside (a reload): its server side is partial

    @classmethod
    def from_dict(cls, data: dict | None, model: str = "") -> Figures:
        """Return the figures of a stored window ({'client', 'server', 't0', 't1'}; missing parts are empty)."""
        data = data if isinstance(data, dict) else {}
        return cls(model, number(data.get("t0")) or 0.0, number(data.get("t1")) or 0.0,
                   ServerFigures.from_dict(data.get("server")), client_rows(data.get("client")),
                   bool(data.get("reset")))

    def to_dict(self) -> dict:
        """Return the JSON form a study keeps (the model is the run's own)."""
        return {"t0": self.t0, "t1": self.t1, "seconds": self.seconds, "client": self.client_dicts(),
                "server": self.server.to_dict(), "reset": self.reset}

    def client_dicts(self) -> dict[str, dict]:
        """Return the client figures per class as the store keeps them (an experiment's client column)."""
        return {cls: row.to_dict() for cls, row in self.client.items()}

    def row(self, cls: str = ALL) -> ClientFigures:
        """Return a class's client figures; empty ones (nothing counted) when the class sent nothing in the window."""
        return self.client.get(cls) or ClientFigures()

    def get(self, key: str, cls: str = ALL):
        """Return a figure, None when not measured: a catalog figure from its side (client ones per class); any
        other key (a scenario's own: tokens_per_s, ...) from the class's client figures, else the server's."""
        if key in BY_KEY:
            return self.client_value(key, cls) if metric(key).side == CLIENT else self.server.get(key)
        value = self.client_value(key, cls)
        return value if value is not None else self.server.get(key)

    def client_value(self, key: str, cls: str = ALL):
        """Return a figure of a class's client figures, None when the class or the figure is absent."""
        row = self.client.get(cls)
        return row.get(key) if row is not None else None

    def samples(self, cls: str = ALL) -> int:
        """Return how many latencies the client percentiles of a class rest on."""
        return int(self.row(cls).latency_n)

    def failures(self, cls: str = ALL) -> tuple[int, int]:
        """Return (failed attempts, attempts that ended) of a class in the window."""
        row = self.row(cls)
        return int(row.failed), int(row.failed + row.ok)

    def latest_error(self, cls: str = ALL) -> dict | None:
        """Return the window's most recent failure text ({kind, count, first, first_t, latest, latest_t}), if any."""
        return latest_error({"error_texts": self.row(cls).error_texts})

    def behind(self, cls: str = ALL) -> float | None:
        """Return the share of a class's requests sent behind their slot, when the generator fell behind
        (loadgen.behind.behind), else None."""
        row = self.row(cls)
        return behind_share({"requests": row.requests, "behind": row.behind})

    def trusted(self, key: str, cls: str = ALL) -> bool:
        """Return False for a percentile that rests on fewer than MIN_SAMPLES latencies."""
        return not metric(key).percentile or metric(key).side != CLIENT or self.samples(cls) >= MIN_SAMPLES

    @property
    def seconds(self) -> float:
        """Return the window's length."""
        return self.t1 - self.t0

    def describe(self, now: float | None = None) -> str:
        """Return which window this is, e.g. 'last 10 s' or '12:01:05–12:01:15'."""
        now = time.time() if now is None else now
        if abs(self.t1 - now) < 1.5:
            return f"last {self.seconds:.0f} s"
        fmt = lambda t: time.strftime("%H:%M:%S", time.localtime(t))  # noqa: E731
        return f"{fmt(self.t0)}–{fmt(self.t1)}"


def measure(metrics, load, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
    """Return the figures of [t0, t1) from the metrics poller and the load runs that sent to the model."""
    server = ServerFigures.from_dict(metrics.window(model, t0, t1))
    rows = load.window(t0, t1, include_held, model=model) if load is not None else {}
    return Figures(model, t0, t1, server, client_rows(rows))


IMPACT_KEYS = ("infer_rps", "avg_batch", "queue_us", "compute_us", "p99_ms")


def impact(marker, measure_fn, span_s: float = 10.0, settle_s: float = 1.0, now: float | None = None) -> dict:
    """Return {'before': figures, 'after': figures|None} around a change, leaving the reload band out.

    Before: the span_s up to when the change was asked for; after: from settle_s past when it served,
    for span_s (or up to now while it is still filling). Requests held by a reload are excluded.
    """
    now = time.time() if now is None else now
    before = measure_fn(marker.t - span_s, marker.t)
    start = marker.settled + settle_s
    after = measure_fn(start, min(start + span_s, now)) if marker.end is not None or not marker.band else None
    if after is not None and after.seconds < 2.0:
        after = None
    return {"before": before, "after": after}
