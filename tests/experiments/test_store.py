"""The experiment store is durable, and comparisons use each metric's direction."""
from __future__ import annotations

import pytest

from app.experiments.capture import capture, compare
from app.store.database import Experiment, ExperimentStore
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures
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
    figures = Figures("gpu_sim", 100.0, 110.0, server=ServerFigures(avg_batch=4.0, infer_count=400.0),
                      client={"all": ClientFigures(p99_ms=5.0, latency_n=400)})
    exp = capture("run", "gpu_sim", "cfg", LoadSpec(), figures)
    assert (exp.started_at, exp.ended_at) == (100.0, 110.0)
    assert exp.server["avg_batch"] == 4.0 and exp.server["infer_count"] == 400.0
    assert exp.client["all"]["p99_ms"] == 5.0 and exp.spec["concurrency"] == LoadSpec().concurrency


def test_studies_keep_their_runs_and_a_dead_owner_means_interrupted(tmp_path):
    import sqlite3

    from app.store.database import DONE, INTERRUPTED, RUNNING, Study

    store = ExperimentStore(tmp_path / "exp.sqlite")
    sid = store.add_study(Study("sweep", "s", "gpu_sim", {"space": {}}, 1.0))
    store.add_run(Experiment("p", "gpu_sim", "cfg", kind="point", study_id=sid, point="i1@4", windows=[{"t0": 1}]))
    store.add_run(Experiment("saved", "gpu_sim", "cfg"))
    assert store.study(sid).status == RUNNING  # this process owns it
    assert [e.point for e in store.runs(study_id=sid)] == ["i1@4"] and [e.label for e in store.runs()] == ["saved"]
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
    (old,) = store.runs()
    assert (old.label, old.kind, old.status, old.windows) == ("old", "run", "done", [])
    store.relabel_run(old.id, "renamed")
    assert store.run(old.id).label == "renamed"


# --- damaged rows: every field read defensively (issue 25) ---------------------------------------------------
def _sql(store, *statements) -> None:
    import sqlite3

    with sqlite3.connect(store.path) as db:
        for statement in statements:
            db.execute(*statement) if isinstance(statement, tuple) else db.execute(statement)


def _sweep(store, keys=("i1@1", "i1@4", "i2@4"), **result):
    from app.experiments.sweep.space import SearchSpace
    from app.store.database import DONE, Study

    space = SearchSpace(model="m", instances=(1, 2), delays_us=(), include_default=False, loads=(1, 4))
    sid = store.add_study(Study("sweep", "s", "m", {"space": space.to_dict()}, 1.0, status=DONE, result=result))
    for key in keys:
        store.add_run(Experiment(key, "m", "cfg", kind="point", study_id=sid, point=key, outcome={"stable": True},
                             client={"all": {"p99_ms": 3.0, "throughput_rps": 100.0, "goodput_rps": 100.0}}))
    return sid


def test_a_damaged_study_row_reads_and_says_which_fields_are_wrong(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    whole = _sweep(store)
    damaged = _sweep(store)
    _sql(store, ("UPDATE studies SET definition = '{\"space\": ', created_at = 'yesterday', status = 'weird', "
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
    _sql(store, ("UPDATE experiments SET client = '{\"all\": {\"p99_ms\": \"fast\", \"throughput_rps\": NaN, "
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
    rows = {r["metric"]: r for r in compare(got, got)}
    assert rows["client p99 (ms)"]["A"] == "—" and rows["client p99 (ms)"]["change"] is None
    assert store.add_run(got) != run  # a run read back (broken or not) stores again: `broken` is no column


def test_points_and_trials_that_cannot_be_read_are_left_out_and_named(tmp_path):
    from app.experiments.ab.comparison import load_trials
    from app.experiments.sweep.sweeper import load_points

    store = ExperimentStore(tmp_path / "exp.sqlite")
    sid = _sweep(store, keys=("i1@1", "i1@4", "i2@4", "i2@", "z9@4", "i1@-3", "i2@1"))
    _sql(store, ("UPDATE experiments SET outcome = '{\"change\": \"big\"}' WHERE point = 'i2@1'",),
         ("UPDATE experiments SET client = 'null' WHERE point = 'i1@4'",))
    problems: list[str] = []
    points = load_points(store, sid, problems)
    print(problems)
    assert [p.key for p in points] == ["i1@1", "i2@4"], [p.key for p in points]
    assert len(problems) == 5 and all("cannot be read" in p for p in problems), problems
    for words in ("'i2@' (run", "its load '' is not a number", "'z9' names no configuration",
                  "'-3' is not above 0", "change 'big' is not a number", "client is null, not a mapping"):
        assert any(words in p for p in problems), (words, problems)
    assert [p.key for p in load_points(store, sid)] == ["i1@1", "i2@4"]  # without a list to say it in: still no raise

    ab = store.add_study(__import__("app.store.database", fromlist=["Study"]).Study("ab", "c", "m", {}, 1.0))
    for point in ("A#0", "B#0", "A#x", "#1"):
        store.add_run(Experiment(point, "m", "cfg", kind="trial", study_id=ab, point=point,
                             client={"all": {"p99_ms": 1.0}}))
    _sql(store, ("UPDATE experiments SET server = '{' WHERE point = 'B#0'",))
    problems = []
    trials = load_trials(store, ab, problems)
    print(problems)
    assert {arm: sorted(per) for arm, per in trials.items()} == {"A": [0]}, trials
    assert len(problems) == 3 and any("'x' is not a whole number" in p for p in problems), problems
    assert any("server is not valid JSON" in p for p in problems) and any("'<arm>#<trial>'" in p for p in problems)


def test_a_stored_sweep_reads_as_far_as_it_can_and_a_broken_one_says_why(tmp_path):
    from app.experiments.stored import read_ab, read_sweep

    store = ExperimentStore(tmp_path / "exp.sqlite")
    whole = _sweep(store, best="i2@4", points=3)
    gone = _sweep(store, best="i2@4", points=3)
    _sql(store, ("DELETE FROM experiments WHERE study_id = ? AND point = 'i2@4'", (gone,)))
    record = read_sweep(store, store.study(whole))
    assert (record.broken, record.problems, len(record.points)) == ("", (), 3), record
    record = read_sweep(store, store.study(gone))
    print(record.problems)
    assert record.broken == "" and [p.key for p in record.points] == ["i1@1", "i1@4"]
    assert any("named the point 'i2@4' as the operating point" in p for p in record.problems), record.problems
    assert any("counted 3 points; 2 can be read" in p for p in record.problems), record.problems

    cases = {  # how the definition is damaged -> what the page says
        "json_set(definition, '$.space.p99_budget_ms', NULL)": "search space's p99_budget_ms is null",
        "'{\"space\": [1, 2]}'": "no space mapping (found list [1, 2])",
        "'{\"space\": {\"loads\": [1], \"colour\": \"red\"}}'": "unexpected keyword argument 'colour'",
        "'{\"space\": {\"loads\": [0]}}'": "load level",
        "'[\"space\"]'": "definition is a list, not a mapping",
    }
    for damage, words in cases.items():
        sid = _sweep(store)
        _sql(store, (f"UPDATE studies SET definition = {damage} WHERE id = ?", (sid,)))
        record = read_sweep(store, store.study(sid))
        print(damage, "->", record.broken)
        assert record.space is None and words in record.broken, (damage, record.broken)
        assert record.broken.count("its definition cannot be read as a sweep") <= 1
    ab = read_ab(store, store.study(whole))  # a sweep is no comparison
    assert ab.plan is None and "stored as a sweep, not a comparison" in ab.broken, ab.broken
