"""The live history kept on disk: server samples, client seconds and markers survive a dashboard restart.

The dashboard holds its history in memory (15 minutes: the poller's samples, the load generator's per-second
buckets with every latency, the markers). `TimelineKeeper` copies what is new into the experiment store's
SQLite file every SAVE_S seconds, drops what is older than the history kept, and at start-up gives the
poller, the load controller and the marker log back what an earlier process of the same lab saw — so a
restart of the dashboard, like a server restart, a new run or a browser reload, keeps the charts, the
markers and the window figures (merged latencies included) of the last 15 minutes.

A scope names the lab (the repository of an embedded server, or the remote server's URL): another server's
history is never shown.
"""
from __future__ import annotations

import atexit
import json
import logging
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path

from app.timeline.markers import Marker

log = logging.getLogger(__name__)

HISTORY_S = 900.0  # what the poller and the load statistics keep in memory
SAVE_S = 10.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS timeline_samples (scope TEXT NOT NULL, t REAL NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY (scope, t))",
    "CREATE TABLE IF NOT EXISTS timeline_markers (scope TEXT NOT NULL, id INTEGER NOT NULL, t REAL NOT NULL,"
    " data TEXT NOT NULL, PRIMARY KEY (scope, id))",
    "CREATE TABLE IF NOT EXISTS timeline_seconds (scope TEXT NOT NULL, run REAL NOT NULL, second INTEGER NOT NULL,"
    " data TEXT NOT NULL, PRIMARY KEY (scope, run, second))",
    "CREATE TABLE IF NOT EXISTS timeline_runs (scope TEXT NOT NULL, run REAL NOT NULL, elapsed_s REAL NOT NULL,"
    " spec TEXT NOT NULL, PRIMARY KEY (scope, run))",
)


def _dumps(value) -> str:
    """JSON with numpy scalars as plain numbers."""
    return json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o))


class TimelineStore:
    """Rolling per-scope history in one SQLite file (the experiment store's)."""

    def __init__(self, path: Path, scope: str, history_s: float = HISTORY_S) -> None:
        self.path, self.scope, self.history_s = Path(path), scope, history_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    def save(self, samples: list[dict], markers: list[Marker], runs: list[dict], now: float) -> None:
        """Write samples, markers and run seconds (replacing any with the same key); drop what is too old."""
        horizon = now - self.history_s
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO timeline_samples VALUES (?, ?, ?)",
                           [(self.scope, s["t"], _dumps(s)) for s in samples])
            db.executemany("INSERT OR REPLACE INTO timeline_markers VALUES (?, ?, ?, ?)",
                           [(self.scope, m.id, m.end or m.t, _dumps(asdict(m))) for m in markers])
            for run in runs:
                db.execute("INSERT OR REPLACE INTO timeline_runs VALUES (?, ?, ?, ?)",
                           (self.scope, run["t0_epoch"], run["elapsed_s"], _dumps(run["spec"])))
                db.executemany("INSERT OR REPLACE INTO timeline_seconds VALUES (?, ?, ?, ?)",
                               [(self.scope, run["t0_epoch"], int(second), _dumps(data))
                                for second, data in run["seconds"].items()])
            db.execute("DELETE FROM timeline_samples WHERE scope = ? AND t < ?", (self.scope, horizon))
            db.execute("DELETE FROM timeline_markers WHERE scope = ? AND t < ?", (self.scope, horizon))
            db.execute("DELETE FROM timeline_seconds WHERE scope = ? AND run + second < ?", (self.scope, horizon))
            db.execute("DELETE FROM timeline_runs WHERE scope = ? AND run + elapsed_s < ?", (self.scope, horizon))

    def load(self, now: float) -> tuple[list[dict], list[Marker], list[dict]]:
        """Return the samples, markers and runs (with their seconds) of the last history_s seconds."""
        horizon = now - self.history_s
        with self._connect() as db:
            samples = [json.loads(r[0]) for r in db.execute(
                "SELECT data FROM timeline_samples WHERE scope = ? AND t >= ? ORDER BY t", (self.scope, horizon))]
            markers = [Marker(**json.loads(r[0])) for r in db.execute(
                "SELECT data FROM timeline_markers WHERE scope = ? AND t >= ? ORDER BY id", (self.scope, horizon))]
            runs = []
            for run, elapsed, spec in db.execute(
                    "SELECT run, elapsed_s, spec FROM timeline_runs WHERE scope = ? AND run + elapsed_s >= ?"
                    " ORDER BY run", (self.scope, horizon)).fetchall():
                seconds = {int(sec): json.loads(data) for sec, data in db.execute(
                    "SELECT second, data FROM timeline_seconds WHERE scope = ? AND run = ? AND run + second >= ?",
                    (self.scope, run, horizon))}
                runs.append({"t0_epoch": run, "elapsed_s": elapsed, "spec": json.loads(spec), "seconds": seconds})
        return samples, markers, runs

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)


class TimelineKeeper:
    """Restore a lab's history at start; save what is new every SAVE_S seconds and once more at close."""

    def __init__(self, store: TimelineStore, metrics, load, markers, every_s: float = SAVE_S,
                 clock=time.time) -> None:
        self.store, self.metrics, self.load, self.markers = store, metrics, load, markers
        self.every_s, self._clock = every_s, clock
        self._saved_t = 0.0  # samples up to here are on disk
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.restored: dict[str, int] = {}

    def restore(self) -> dict[str, int]:
        """Give the poller, the load controller and the marker log what the store kept; return the counts."""
        try:
            samples, markers, runs = self.store.load(self._clock())
        except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:  # a damaged store costs the history only
            log.warning("the stored history could not be read (%s): starting without it", exc)
            return {}
        self.restored = {"samples": self.metrics.restore(samples), "markers": self.markers.restore(markers),
                         "runs": self.load.restore(runs)}
        self._saved_t = max((s["t"] for s in samples), default=0.0)
        return self.restored

    def start(self) -> None:
        """Save in a daemon thread every every_s seconds, and once more when the process exits."""
        self._thread = threading.Thread(target=self._run, name="tbl-timeline-keeper", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def save(self) -> None:
        """Write what is new since the last save (and the last few seconds again: they were still filling)."""
        now = self._clock()
        since = max(self._saved_t - 2.0, now - self.store.history_s)
        samples = self.metrics.export(since)
        self.store.save(samples, self.markers.list(since=since - 60.0), self.load.export(since), now)
        if samples:
            self._saved_t = samples[-1]["t"]

    def stop(self) -> None:
        """Stop the thread after one last save (once)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
        self._save_or_log()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._save_or_log()

    def _save_or_log(self) -> None:
        try:
            self.save()
        except (sqlite3.Error, OSError) as exc:  # a full disk costs the saved history, never the dashboard
            log.warning("the history could not be saved: %s", exc)
