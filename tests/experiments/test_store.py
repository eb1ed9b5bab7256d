"""The experiment store is durable, and comparisons use each metric's direction."""
from __future__ import annotations

import pytest

from app.experiments.compare import capture, compare
from app.experiments.store import Experiment, ExperimentStore
from app.figures import WindowFigures
from loadgen.spec import LoadSpec


def test_experiments_survive_a_new_store_object(tmp_path):
    path = tmp_path / "exp.sqlite"
    exp_id = ExperimentStore(path).add(Experiment("delay 500", "gpu_sim", "max_batch_size: 8\n",
                                                  client={"all": {"p99_ms": 12.5}}, server={"avg_batch": 3.0}))
    again = ExperimentStore(path)
    got = again.get(exp_id)
    assert (got.label, got.client["all"]["p99_ms"], got.server["avg_batch"]) == ("delay 500", 12.5, 3.0)
    assert [e.id for e in again.list("gpu_sim")] == [exp_id] and again.list("mlp") == []
    again.delete(exp_id)
    with pytest.raises(KeyError):
        again.get(exp_id)


def test_compare_of_two_single_runs_shows_changes_and_names_no_winner():
    a = Experiment("A", "gpu_sim", "", client={"all": {"p99_ms": 20.0, "throughput_rps": 500}}, server={"avg_batch": 2.0})
    b = Experiment("B", "gpu_sim", "", client={"all": {"p99_ms": 10.0, "throughput_rps": 400}}, server={"avg_batch": 2.0})
    rows = {r["metric"]: r for r in compare(a, b)}
    assert rows["client p99 (ms)"]["change"] == "-50%" and rows["client ok throughput (req/s)"]["change"] == "-20%"
    assert all("better" not in r for r in rows.values())  # one run each: no idea of the noise, no verdict


def test_capture_keeps_the_window_figures_and_the_spec():
    figures = WindowFigures("gpu_sim", 100.0, 110.0, server={"avg_batch": 4.0, "infer_count": 400.0},
                            client={"all": {"p99_ms": 5.0, "latency_n": 400}})
    exp = capture("run", "gpu_sim", "cfg", LoadSpec(), figures)
    assert (exp.started_at, exp.ended_at) == (100.0, 110.0)
    assert exp.server["avg_batch"] == 4.0 and exp.server["infer_count"] == 400.0
    assert exp.client["all"]["p99_ms"] == 5.0 and exp.spec["concurrency"] == LoadSpec().concurrency


def test_studies_keep_their_runs_and_a_dead_owner_means_interrupted(tmp_path):
    import sqlite3

    from app.experiments.store import DONE, INTERRUPTED, RUNNING, Study

    store = ExperimentStore(tmp_path / "exp.sqlite")
    sid = store.add_study(Study("sweep", "s", "gpu_sim", {"space": {}}, 1.0))
    store.add(Experiment("p", "gpu_sim", "cfg", kind="point", study_id=sid, point="i1@4", windows=[{"t0": 1}]))
    store.add(Experiment("saved", "gpu_sim", "cfg"))
    assert store.study(sid).status == RUNNING  # this process owns it
    assert [e.point for e in store.list(study_id=sid)] == ["i1@4"] and [e.label for e in store.list()] == ["saved"]
    with sqlite3.connect(store.path) as db:  # a process that no longer exists
        db.execute("UPDATE studies SET owner = ? WHERE id = ?", (f"{__import__('socket').gethostname()}:999999999", sid))
    again = ExperimentStore(tmp_path / "exp.sqlite")
    assert again.study(sid).status == INTERRUPTED and again.study(sid).ended_at is not None
    again.update_study(sid, status=DONE, result={"best": "i1@4"})
    assert again.study(sid).result == {"best": "i1@4"}
    again.delete_study(sid)
    assert again.list(study_id=sid) == [] and again.studies() == []


def test_a_store_of_the_first_schema_is_upgraded_in_place(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, model TEXT "
                   "NOT NULL, started_at REAL, ended_at REAL, config_text TEXT NOT NULL, spec TEXT NOT NULL, client "
                   "TEXT NOT NULL, server TEXT NOT NULL)")
        db.execute("INSERT INTO experiments (label, model, config_text, spec, client, server) VALUES "
                   "('old', 'gpu_sim', 'cfg', '{}', '{}', '{}')")
    store = ExperimentStore(path)
    (old,) = store.list()
    assert (old.label, old.kind, old.status, old.windows) == ("old", "run", "done", [])
    store.relabel(old.id, "renamed")
    assert store.get(old.id).label == "renamed"
