"""The experiment store: durable, its studies' runs kept with them, a dead owner's study interrupted, an old schema
upgraded in place, damaged rows read and named (issue 25), and labels held to app.text_limits."""
from __future__ import annotations

import socket
import sqlite3
import time

import pytest

from tests.unit.store.stored_rows import run_sql, stored_sweep
from app.store.database import DONE, INTERRUPTED, RUNNING, Experiment, ExperimentStore, Study
from app.text_limits import MAX_LABEL_CHARS

CONFIG = 'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'


def test_experiments_survive_a_new_store_object(tmp_path):
    path = tmp_path / "exp.sqlite"
    exp_id = ExperimentStore(path).add_run(Experiment("delay 500", "gpu_sim", "max_batch_size: 8\n",
                                                      client={"all": {"p99_ms": 12.5}}, server={"avg_batch": 3.0}))
    again = ExperimentStore(path)
    got = again.run(exp_id)
    assert (got.label, got.client["all"]["p99_ms"], got.server["avg_batch"]) == ("delay 500", 12.5, 3.0)
    assert [e.id for e in again.runs("gpu_sim")] == [exp_id] and again.runs("mlp") == []
    again.delete_run(exp_id)
    with pytest.raises(KeyError):
        again.run(exp_id)


def test_studies_keep_their_runs_and_a_dead_owner_means_interrupted(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    sid = store.add_study(Study("sweep", "s", "gpu_sim", {"space": {}}, 1.0))
    store.add_run(Experiment("p", "gpu_sim", "cfg", kind="point", study_id=sid, point="i1@4", windows=[{"t0": 1}]))
    store.add_run(Experiment("saved", "gpu_sim", "cfg"))
    assert store.study(sid).status == RUNNING  # this process owns it
    assert [e.point for e in store.runs(study_id=sid)] == ["i1@4"] and [e.label for e in store.runs()] == ["saved"]
    with sqlite3.connect(store.path) as db:  # a process that no longer exists
        db.execute("UPDATE studies SET owner = ? WHERE id = ?", (f"{socket.gethostname()}:999999999", sid))
    again = ExperimentStore(tmp_path / "exp.sqlite")
    assert again.study(sid).status == INTERRUPTED and again.study(sid).ended_at is not None
    again.update_study(sid, status=DONE, result={"best": "i1@4"})
    assert again.study(sid).result == {"best": "i1@4"}
    again.delete_study(sid)
    assert again.runs(study_id=sid) == [] and again.studies() == []


def test_a_store_of_the_first_schema_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, model TEXT "
                   "NOT NULL, started_at REAL, ended_at REAL, config_text TEXT NOT NULL, spec TEXT NOT NULL, client "
                   "TEXT NOT NULL, server TEXT NOT NULL)")
        db.execute("INSERT INTO experiments (label, model, config_text, spec, client, server) VALUES "
                   "('old', 'gpu_sim', 'cfg', '{}', '{}', '{}')")
    store = ExperimentStore(path)
    (old,) = store.runs()
    assert (old.label, old.kind, old.status, old.windows) == ("old", "run", "done", [])
    store.relabel_run(old.id, "renamed")
    assert store.run(old.id).label == "renamed"


# --- damaged rows: every field read defensively (issue 25) ---------------------------------------------------
def test_a_damaged_study_row_reads_and_says_which_fields_are_wrong(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    whole = stored_sweep(store)
    damaged = stored_sweep(store)
    run_sql(store, ("UPDATE studies SET definition = '{\"space\": ', created_at = 'yesterday', status = 'weird', "
                 "result = '[1, 2]', env = 'null' WHERE id = ?", (damaged,)))
    by_id = {s.id: s for s in store.studies()}  # neither listing nor fetching raises
    assert by_id[whole].broken == "" and store.study(whole).broken == ""
    got = store.study(damaged)
    print(got.broken)
    for words in ("definition is not valid JSON", "created_at is 'yesterday', not a number",
                  "status is 'weird'", "result is a list, not a mapping", "env is null, not a mapping"):
        assert words in got.broken, (words, got.broken)
    assert (got.definition, got.result, got.env, got.created_at) == ({}, {}, {}, 0.0)
    store.delete_study(damaged)
    assert [s.id for s in store.studies()] == [whole]


def test_a_damaged_run_keeps_what_reads_and_drops_figures_that_are_not_numbers(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    run = store.add_run(Experiment("r", "m", "cfg", client={"all": {"p99_ms": 2.0}}, server={"avg_batch": 3.0}))
    run_sql(store, ("UPDATE experiments SET client = '{\"all\": {\"p99_ms\": \"fast\", \"throughput_rps\": NaN, "
                 "\"errors_by_kind\": {\"x\": 1}}, \"gold\": [1]}', server = '{\"avg_batch\": [3]}', "
                 "windows = 'nope', started_at = 'noon', seed = 2.5 WHERE id = ?", (run,)))
    got = store.run(run)
    print(got.broken)
    assert got.client == {"all": {"p99_ms": None, "throughput_rps": None, "errors_by_kind": {"x": 1}}}, got.client
    assert got.server == {"avg_batch": None} and got.windows == [] and got.started_at is None and got.seed is None
    for words in ("client['all'] figure 'p99_ms' is 'fast', not a number", "client['gold'] is a list",
                  "server figure 'avg_batch' is [3]", "windows is not valid JSON", "started_at is 'noon'",
                  "seed is 2.5, not a whole number"):
        assert words in got.broken, (words, got.broken)
    assert "throughput_rps" not in got.broken  # JSON's NaN is a figure that could not be computed: absent, not wrong
    assert store.add_run(got) != run  # a run read back (broken or not) stores again: `broken` is no column


# --- stored text ----------------------------------------------------------------------------------------------------
def test_labels_over_the_maximum_are_refused_by_the_store(tmp_path):
    store = ExperimentStore(tmp_path / "e.db")
    huge = "x" * 200_000
    with pytest.raises(ValueError, match="the run's label is 200,000 characters; it may have at most 200"):
        store.add_run(Experiment(huge, "m", CONFIG))
    with pytest.raises(ValueError, match="the sweep's label is 200,000 characters"):
        store.add_study(Study("sweep", huge, "m", {}, time.time()))
    run = store.add_run(Experiment("y" * MAX_LABEL_CHARS, "m", CONFIG))  # at the maximum: kept whole
    study = store.add_study(Study("ab", "fine", "m", {}, time.time()))
    with pytest.raises(ValueError, match="the run's label is 201 characters"):
        store.relabel_run(run, "z" * (MAX_LABEL_CHARS + 1))
    with pytest.raises(ValueError, match="the study's label is 200,000 characters"):
        store.update_study(study, label=huge)
    assert store.run(run).label == "y" * MAX_LABEL_CHARS and store.study(study).label == "fine"
    assert store.runs() == [store.run(run)]
