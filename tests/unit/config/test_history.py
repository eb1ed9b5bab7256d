"""Config history: versions on disk, undo stack, diffs, unreadable versions skipped
(tests/contract/config/test_history.py kills a real process between the writes)."""
from __future__ import annotations

import itertools
import json

import pytest

from app.config import Action, ConfigHistory, HistoryError, unified_diff
from app.config.history import history_root, repository_key


@pytest.fixture
def store(tmp_path):
    ticks = itertools.count(1_700_000_000)
    return ConfigHistory(tmp_path / "h", clock=lambda: float(next(ticks)))


def test_a_version_is_one_json_file_with_its_note_and_text(store, tmp_path):
    version = store.record("gpu_sim", "a\n", Action.APPLY, note="more instances", seconds=1.5)
    folder = tmp_path / "h" / "gpu_sim"
    assert sorted(p.name for p in folder.iterdir()) == [f"{version.id}.json"]
    note = json.loads((folder / f"{version.id}.json").read_text())
    assert note["action"] == "apply" and note["note"] == "more instances" and note["seconds"] == 1.5
    assert note["text"] == "a\n" and store.text("gpu_sim", version.id) == "a\n"
    assert store.versions("gpu_sim") == [version]
    assert "apply" in version.label() and "more instances" in version.label()


def test_versions_stay_in_order(store):
    ids = [store.record("m", f"{i}\n", Action.APPLY).id for i in range(12)]
    assert [v.id for v in store.versions("m")] == ids
    assert store.text("m", ids[10]) == "10\n"


def test_undo_walks_back_one_step_at_a_time(store):
    base = store.record("m", "0\n", Action.BASELINE)
    first = store.record("m", "1\n", Action.APPLY)
    store.record("m", "2\n", Action.APPLY)
    assert store.undo_target("m") == first
    store.record("m", "1\n", Action.UNDO, restores=first.id)
    assert store.undo_target("m") == base
    store.record("m", "0\n", Action.UNDO, restores=base.id)
    with pytest.raises(HistoryError, match="nothing to undo"):
        store.undo_target("m")


def test_rollback_is_a_new_step(store):
    base = store.record("m", "0\n", Action.BASELINE)
    store.record("m", "1\n", Action.APPLY)
    back = store.record("m", "0\n", Action.ROLLBACK, restores=base.id)
    assert [v.id for v in store.stack("m")][-1] == back.id
    assert store.text("m", store.undo_target("m").id) == "1\n"


def test_unknown_version_and_bad_names_are_refused(store):
    store.record("m", "0\n", Action.BASELINE)
    with pytest.raises(HistoryError, match="no config version 'nope'"):
        store.get("m", "nope")
    with pytest.raises(HistoryError, match="history folder"):
        store.record("../etc", "x", Action.APPLY)


def test_diff_between_versions(store):
    a = store.record("m", "max_batch_size: 8\n", Action.BASELINE)
    b = store.record("m", "max_batch_size: 16\n", Action.APPLY)
    diff = store.diff("m", a.id, b.id)
    assert "-max_batch_size: 8" in diff and "+max_batch_size: 16" in diff
    assert unified_diff("same\n", "same\n") == ""


def test_history_root_lives_in_the_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    key = repository_key(tmp_path / "model_repository")
    assert key.startswith("model_repository-") and key != repository_key(tmp_path / "other" / "model_repository")
    assert history_root(key) == tmp_path / "state" / "history" / key
    assert history_root("remote-host:8000").name == "remote-host_8000"


# --- unreadable versions and disk errors -------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b'{"id": "000', b"\xff\xfe not utf-8", b"[1, 2]",
                                     b'{"id": "x", "action": "?", "text": ""}', b""],
                         ids=["truncated", "binary", "array", "bad-fields", "empty"])
def test_an_unreadable_version_is_skipped_and_reported(store, tmp_path, content):
    base = store.record("m", "0\n", Action.BASELINE)
    first = store.record("m", "1\n", Action.APPLY)
    bad = tmp_path / "h" / "m" / "00003-20240101T000000000000Z.json"
    bad.write_bytes(content)
    last = store.record("m", "2\n", Action.APPLY)
    assert store.versions("m") == [base, first, last]
    problems = store.problems("m")
    assert [p.name for p in problems] == [bad.stem] and "unreadable" in problems[0].message, problems
    assert store.undo_target("m") == first
    with pytest.raises(HistoryError, match="cannot be read: unreadable"):
        store.get("m", bad.stem)


def test_disk_errors_become_history_errors(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the history folder should be")
    store = ConfigHistory(blocked)
    with pytest.raises(HistoryError, match="could not be written"):
        store.record("m", "0\n", Action.BASELINE)
    with pytest.raises(HistoryError, match="nothing to undo"):
        store.undo_target("m")
