"""Stored rows the store's and the studies' tests damage: a sweep of points, and SQL run on the store's file."""
from __future__ import annotations

import sqlite3

from app.experiments.sweep.space import SearchSpace
from app.store.database import DONE, Experiment, ExperimentStore, Study


def run_sql(store: ExperimentStore, *statements) -> None:
    """Run statements (text, or (text, parameters)) on the store's file, as a damaged row would be written."""
    with sqlite3.connect(store.path) as db:
        for statement in statements:
            db.execute(*statement) if isinstance(statement, tuple) else db.execute(statement)


def stored_sweep(store: ExperimentStore, keys=("i1@1", "i1@4", "i2@4"), **result) -> int:
    """Store a done sweep of model m with one point per key ('i1@4': 1 instance at load 4); return its id."""
    space = SearchSpace(model="m", instances=(1, 2), delays_us=(), include_default=False, loads=(1, 4))
    sid = store.add_study(Study("sweep", "s", "m", {"space": space.to_dict()}, 1.0, status=DONE, result=result))
    for key in keys:
        store.add_run(Experiment(key, "m", "cfg", kind="point", study_id=sid, point=key, outcome={"stable": True},
                                 client={"all": {"p99_ms": 3.0, "throughput_rps": 100.0, "goodput_rps": 100.0}}))
    return sid
