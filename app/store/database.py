"""SQLite store of experiments: measured runs, and the studies (sweeps, A/B comparisons) made of them.

A run (an `experiments` row) measures one configuration: its full config.pbtxt, the traffic spec and
seed, every measurement window (client buckets with their latency samples, server counter
differences), the reload windows it excluded and its outcome. A study groups the runs of a sweep or
an A/B comparison with its definition and result; a study still marked running whose process is gone
was interrupted (a crash or a killed dashboard), and says so.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.store.stored_rows import RowReader
from app.timeline.figures import Figures
from app.timeline.sides import ServerFigures, client_rows
from app.text_limits import check_label

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL, model TEXT NOT NULL, started_at REAL, ended_at REAL,
    config_text TEXT NOT NULL, spec TEXT NOT NULL, client TEXT NOT NULL, server TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS studies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL, label TEXT NOT NULL, model TEXT NOT NULL, created_at REAL NOT NULL, ended_at REAL,
    status TEXT NOT NULL, definition TEXT NOT NULL, result TEXT NOT NULL DEFAULT '{}',
    base_config TEXT NOT NULL DEFAULT '', env TEXT NOT NULL DEFAULT '{}', owner TEXT NOT NULL DEFAULT '',
    note TEXT NOT NULL DEFAULT ''
);
"""
# Columns added to experiments after its first version (older stores are upgraded in place).
_RUN_COLUMNS = {
    "kind": "TEXT NOT NULL DEFAULT 'run'", "status": "TEXT NOT NULL DEFAULT 'done'", "study_id": "INTEGER",
    "point": "TEXT NOT NULL DEFAULT ''", "seed": "INTEGER", "windows": "TEXT NOT NULL DEFAULT '[]'",
    "reloads": "TEXT NOT NULL DEFAULT '[]'", "outcome": "TEXT NOT NULL DEFAULT '{}'",
}
RUNNING, DONE, CANCELLED, INTERRUPTED, FAILED = "running", "done", "cancelled", "interrupted", "failed"
STUDY_STATUSES = (RUNNING, DONE, CANCELLED, INTERRUPTED, FAILED)
RUN_STATUSES = (DONE, FAILED, INTERRUPTED)
# a study's kind as its label's message says it
_KINDS = {"sweep": "sweep", "ab": "comparison", "scenario": "scenario", "trace_sweep": "trace-judged sweep",
          "autopilot": "autopilot run"}


@dataclass(frozen=True)
class Experiment:
    """One measured run: what was served, what traffic it got, what came out."""

    label: str
    model: str
    config_text: str
    started_at: float | None = None
    ended_at: float | None = None
    spec: dict = field(default_factory=dict)
    client: dict = field(default_factory=dict)  # stored form (ClientFigures.to_dict) per traffic class; read: window()
    server: dict = field(default_factory=dict)  # stored form (ServerFigures.to_dict) over the run; read: window()
    id: int | None = None
    kind: str = "run"  # run (saved by hand), point (of a sweep), trial (of an A/B comparison)
    status: str = DONE  # done, failed (the config could not be applied), interrupted
    study_id: int | None = None
    point: str = ""  # sweep: '<config key>@<load>'; A/B: '<arm>#<trial>'
    seed: int | None = None
    windows: list = field(default_factory=list)  # every measurement window (meter.MeasuredWindow.to_dict or per second)
    reloads: list = field(default_factory=list)  # [t0, t1] of reload bands left out
    outcome: dict = field(default_factory=dict)  # e.g. stable, change, note, load
    broken: str = ""  # what is wrong with the stored row ('' when it reads whole); never stored itself

    def window(self) -> Figures:
        """Return the run's figures as the one figures type (app.timeline.figures.Figures), read from its columns."""
        return Figures(self.model, self.started_at or 0.0, self.ended_at or 0.0, ServerFigures.from_dict(self.server),
                       client_rows(self.client))


@dataclass(frozen=True)
class Study:
    """A sweep or an A/B comparison: its definition, state and result; its runs are experiments."""

    kind: str  # sweep | ab
    label: str
    model: str
    definition: dict
    created_at: float
    status: str = RUNNING
    result: dict = field(default_factory=dict)
    base_config: str = ""
    env: dict = field(default_factory=dict)
    ended_at: float | None = None
    owner: str = ""
    note: str = ""
    id: int | None = None
    broken: str = ""  # what is wrong with the stored row ('' when it reads whole); never stored itself


def owner_tag() -> str:
    """Return who runs a study: host and process id (a study whose process is gone was interrupted)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's study: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ExperimentStore:
    """Add, list, fetch, relabel and delete experiments and studies in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._lock, self._connect() as db:
            db.executescript(_SCHEMA)
            have = {r["name"] for r in db.execute("PRAGMA table_info(experiments)")}
            for name, decl in _RUN_COLUMNS.items():
                if name not in have:
                    db.execute(f"ALTER TABLE experiments ADD COLUMN {name} {decl}")

    # --- runs -------------------------------------------------------------------------------------------
    def add_run(self, exp: Experiment) -> int:
        """Store an experiment and return its id; ValueError when its label is longer than MAX_LABEL_CHARS."""
        check_label(exp.label, "the run's label")
        row = asdict(exp)
        row.pop("id")
        row.pop("broken")
        for key in ("spec", "client", "server", "windows", "reloads", "outcome"):
            row[key] = json.dumps(row[key], default=str)
        cols = ", ".join(row)
        with self._lock, self._connect() as db:
            cur = db.execute(f"INSERT INTO experiments ({cols}) VALUES ({', '.join('?' * len(row))})",
                             tuple(row.values()))
            return int(cur.lastrowid)

    def runs(self, model: str | None = None, kind: str | None = "run", study_id: int | None = None
             ) -> list[Experiment]:
        """Return experiments, newest first: saved runs by default, or one study's runs (oldest first)."""
        where, args = [], []
        if model:
            where.append("model = ?")
            args.append(model)
        if study_id is not None:
            where.append("study_id = ?")
            args.append(study_id)
        elif kind:
            where.append("kind = ?")
            args.append(kind)
        order = "ASC" if study_id is not None else "DESC"
        query = "SELECT * FROM experiments" + (" WHERE " + " AND ".join(where) if where else "") + f" ORDER BY id {order}"
        with self._connect() as db:
            return [_experiment(r) for r in db.execute(query, args)]

    def run(self, exp_id: int) -> Experiment:
        """Return one experiment; KeyError when there is none."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM experiments WHERE id = ?", (exp_id,)).fetchone()
        if row is None:
            raise KeyError(f"no experiment {exp_id}")
        return _experiment(row)

    def relabel_run(self, exp_id: int, label: str) -> None:
        """Give an experiment a new label."""
        if not label.strip():
            raise ValueError("a label cannot be empty")
        label = check_label(label, "the run's label")
        with self._lock, self._connect() as db:
            db.execute("UPDATE experiments SET label = ? WHERE id = ?", (label.strip(), exp_id))

    def set_outcome(self, exp_id: int, outcome: dict) -> None:
        """Replace an experiment's outcome (a prediction's measurement, once the change has shown)."""
        with self._lock, self._connect() as db:
            db.execute("UPDATE experiments SET outcome = ? WHERE id = ?", (json.dumps(outcome, default=str), exp_id))

    def delete_run(self, exp_id: int) -> None:
        """Remove one experiment."""
        with self._lock, self._connect() as db:
            db.execute("DELETE FROM experiments WHERE id = ?", (exp_id,))

    # --- studies ----------------------------------------------------------------------------------------
    def add_study(self, study: Study) -> int:
        """Store a new study (status running, owned by this process) and return its id; ValueError when its label is
        longer than MAX_LABEL_CHARS."""
        check_label(study.label, f"the {_KINDS.get(study.kind, study.kind)}'s label")
        row = asdict(study)
        row.pop("id")
        row.pop("broken")
        row["owner"] = row["owner"] or owner_tag()
        for key in ("definition", "result", "env"):
            row[key] = json.dumps(row[key], default=str)
        with self._lock, self._connect() as db:
            cur = db.execute(f"INSERT INTO studies ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                             tuple(row.values()))
            return int(cur.lastrowid)

    def study(self, study_id: int) -> Study:
        """Return one study; KeyError when there is none. A running study whose process is gone is interrupted."""
        self.mark_orphans()
        with self._connect() as db:
            row = db.execute("SELECT * FROM studies WHERE id = ?", (study_id,)).fetchone()
        if row is None:
            raise KeyError(f"no study {study_id}")
        return _study(row)

    def studies(self, kind: str | None = None, model: str | None = None) -> list[Study]:
        """Return studies, newest first."""
        self.mark_orphans()
        where, args = [], []
        for col, value in (("kind", kind), ("model", model)):
            if value:
                where.append(f"{col} = ?")
                args.append(value)
        query = "SELECT * FROM studies" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC"
        with self._connect() as db:
            return [_study(r) for r in db.execute(query, args)]

    def update_study(self, study_id: int, *, status: str | None = None, result: dict | None = None,
                     note: str | None = None, label: str | None = None, owner: str | None = None) -> None:
        """Change a study's status (ending it unless running), result, note, label or owner."""
        if label is not None:
            label = check_label(label, "the study's label")
        sets, args = [], []
        if status is not None:
            sets += ["status = ?", "ended_at = ?"]
            args += [status, None if status == RUNNING else time.time()]
        for col, value in (("result", result), ("note", note), ("label", label), ("owner", owner)):
            if value is not None:
                sets.append(f"{col} = ?")
                args.append(json.dumps(value, default=str) if col == "result" else value)
        if not sets:
            return
        with self._lock, self._connect() as db:
            db.execute(f"UPDATE studies SET {', '.join(sets)} WHERE id = ?", (*args, study_id))

    def delete_study(self, study_id: int) -> None:
        """Remove a study and its runs."""
        with self._lock, self._connect() as db:
            db.execute("DELETE FROM experiments WHERE study_id = ?", (study_id,))
            db.execute("DELETE FROM studies WHERE id = ?", (study_id,))

    def mark_orphans(self) -> int:
        """Mark running studies whose process is gone as interrupted; return how many."""
        with self._connect() as db:
            rows = db.execute("SELECT id, owner FROM studies WHERE status = ?", (RUNNING,)).fetchall()
        gone = [r["id"] for r in rows if not _alive(str(r["owner"] or ""))]
        for study_id in gone:
            self.update_study(study_id, status=INTERRUPTED,
                              note="the process running it ended before it finished (a crash or a closed dashboard)")
        return len(gone)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        db.row_factory = sqlite3.Row
        return db


def _experiment(row: sqlite3.Row) -> Experiment:
    """Return a stored run as far as it reads; its `broken` says what did not (never raises)."""
    r = RowReader(row)
    status = r.text("status", required=False) or DONE
    if status not in RUN_STATUSES:
        r.wrong(f"status is {status!r}, not one of {', '.join(RUN_STATUSES)}")
    return Experiment(
        label=r.text("label"), model=r.text("model"), config_text=r.text("config_text"),
        started_at=r.number("started_at"), ended_at=r.number("ended_at"), spec=r.json("spec", dict, {}),
        client=r.figures("client", per_class=True), server=r.figures("server", per_class=False), id=r.integer("id"),
        kind=r.text("kind", required=False) or "run", status=status, study_id=r.integer("study_id"),
        point=r.text("point", required=False), seed=r.integer("seed"),
        windows=r.listing_of_mappings("windows") if "windows" in r.columns else [],
        reloads=r.json("reloads", list, []) if "reloads" in r.columns else [],
        outcome=r.json("outcome", dict, {}) if "outcome" in r.columns else {}, broken=r.broken)


def _study(row: sqlite3.Row) -> Study:
    """Return a stored study as far as it reads; its `broken` says what did not (never raises)."""
    r = RowReader(row)
    status = r.text("status")
    if status not in STUDY_STATUSES:
        r.wrong(f"status is {status!r}, not one of {', '.join(STUDY_STATUSES)}")
    return Study(kind=r.text("kind"), label=r.text("label"), model=r.text("model"),
                 definition=r.json("definition", dict, {}), created_at=r.number("created_at", required=True) or 0.0,
                 status=status, result=r.json("result", dict, {}), base_config=r.text("base_config"),
                 env=r.json("env", dict, {}), ended_at=r.number("ended_at"), owner=r.text("owner", required=False),
                 note=r.text("note", required=False), id=r.integer("id"), broken=r.broken)
