"""Stored studies read back as far as they can: a point or trial that cannot be read is left out and named, a sweep
whose definition is damaged says why, and a study stored before its start was recorded reads as a file it wrote back."""
from __future__ import annotations


from app.experiments.ab.comparison import load_trials
from app.experiments.driving import Start
from app.experiments.stored import read_ab, read_sweep
from app.experiments.sweep.sweeper import load_points
from tests.unit.store.stored_rows import run_sql, stored_sweep
from app.store.database import Experiment, ExperimentStore, Study


def test_points_and_trials_that_cannot_be_read_are_left_out_and_named(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    sid = stored_sweep(store, keys=("i1@1", "i1@4", "i2@4", "i2@", "z9@4", "i1@-3", "i2@1"))
    run_sql(store, ("UPDATE experiments SET outcome = '{\"change\": \"big\"}' WHERE point = 'i2@1'",),
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

    ab = store.add_study(Study("ab", "c", "m", {}, 1.0))
    for point in ("A#0", "B#0", "A#x", "#1"):
        store.add_run(Experiment(point, "m", "cfg", kind="trial", study_id=ab, point=point,
                             client={"all": {"p99_ms": 1.0}}))
    run_sql(store, ("UPDATE experiments SET server = '{' WHERE point = 'B#0'",))
    problems = []
    trials = load_trials(store, ab, problems)
    print(problems)
    assert {arm: sorted(per) for arm, per in trials.items()} == {"A": [0]}, trials
    assert len(problems) == 3 and any("'x' is not a whole number" in p for p in problems), problems
    assert any("server is not valid JSON" in p for p in problems) and any("'<arm>#<trial>'" in p for p in problems)


def test_a_stored_sweep_reads_as_far_as_it_can_and_a_broken_one_says_why(tmp_path):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    whole = stored_sweep(store, best="i2@4", points=3)
    gone = stored_sweep(store, best="i2@4", points=3)
    run_sql(store, ("DELETE FROM experiments WHERE study_id = ? AND point = 'i2@4'", (gone,)))
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
        sid = stored_sweep(store)
        run_sql(store, (f"UPDATE studies SET definition = {damage} WHERE id = ?", (sid,)))
        record = read_sweep(store, store.study(sid))
        print(damage, "->", record.broken)
        assert record.space is None and words in record.broken, (damage, record.broken)
        assert record.broken.count("its definition cannot be read as a sweep") <= 1
    ab = read_ab(store, store.study(whole))  # a sweep is no comparison
    assert ab.plan is None and "stored as a sweep, not a comparison" in ab.broken, ab.broken


def test_a_study_stored_before_its_start_was_recorded_reads_as_a_file_it_wrote_back():
    old = Study("sweep", "old", "m", {"space": {}}, 0.0, base_config='name: "m"\n')
    assert Start.of(old) == Start('name: "m"\n', 'name: "m"\n', True)
    new = Study("sweep", "new", "m", {"start": Start("", 'name: "m"\nmax_batch_size: 8\n', False).to_dict()}, 0.0,
                base_config='name: "m"\nmax_batch_size: 8\n')
    assert Start.of(new).had_file is False and Start.of(new).served.endswith("max_batch_size: 8\n")
