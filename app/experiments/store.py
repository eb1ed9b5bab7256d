"""SQLite store of experiments: one row per measured run, kept across restarts."""
from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL, model TEXT NOT NULL, started_at REAL, ended_at REAL,
    config_text TEXT NOT NULL, spec TEXT NOT NULL, client TEXT NOT NULL, server TEXT NOT NULL
)"""


@dataclass(frozen=True)
class Experiment:
    """One measured run: what was served, what traffic it got, what came out."""

    label: str
    model: str
    config_text: str
    started_at: float | None = None
    ended_at: float | None = None
    spec: dict = field(default_factory=dict)
    client: dict = field(default_factory=dict)  # per traffic class: counts and p50/p90/p95/p99 ms
    server: dict = field(default_factory=dict)  # metric key -> mean over the run
    id: int | None = None


class ExperimentStore:
    """Add, list, fetch and delete experiments in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(_SCHEMA)

    def add(self, exp: Experiment) -> int:
        """Store an experiment and return its id."""
        row = asdict(exp)
        with self._lock, self._connect() as db:
            cur = db.execute(
                "INSERT INTO experiments (label, model, started_at, ended_at, config_text, spec, client, server)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (exp.label, exp.model, exp.started_at, exp.ended_at, exp.config_text,
                 *(json.dumps(row[k], default=str) for k in ("spec", "client", "server"))),
            )
            return int(cur.lastrowid)

    def list(self, model: str | None = None) -> list[Experiment]:
        """Return experiments, newest first."""
        query = "SELECT * FROM experiments" + (" WHERE model = ?" if model else "") + " ORDER BY id DESC"
        with self._connect() as db:
            return [_experiment(r) for r in db.execute(query, (model,) if model else ())]

    def get(self, exp_id: int) -> Experiment:
        """Return one experiment; KeyError when there is none."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM experiments WHERE id = ?", (exp_id,)).fetchone()
        if row is None:
            raise KeyError(f"no experiment {exp_id}")
        return _experiment(row)

    def delete(self, exp_id: int) -> None:
        """Remove one experiment."""
        with self._lock, self._connect() as db:
            db.execute("DELETE FROM experiments WHERE id = ?", (exp_id,))

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        db.row_factory = sqlite3.Row
        return db


def _experiment(row: sqlite3.Row) -> Experiment:
    return Experiment(
        label=row["label"], model=row["model"], config_text=row["config_text"], started_at=row["started_at"],
        ended_at=row["ended_at"], spec=json.loads(row["spec"]), client=json.loads(row["client"]),
        server=json.loads(row["server"]), id=row["id"],
    )
