"""Config history across a crash: a real process SIGKILLed between the writes loses at most the version it was
writing, an old two-file history is still read, and the config service goes on over it on the real server."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from app.config import Action, ConfigHistory, ConfigService, HistoryError, InstanceGroup, Kind, set_instance_group
from app.paths import ROOT
from app.server.endpoint import Endpoint

_CHILD = r'''
import json, os, signal, sys
from dataclasses import asdict
from pathlib import Path
from app.config.history import Action, ConfigHistory, Version
from app.config.model_config import write_text_atomic

root, point = Path(sys.argv[1]), sys.argv[2]
store = ConfigHistory(root)


def die(*_):
    os.kill(os.getpid(), signal.SIGKILL)


def legacy_record(n, text, action, kill_between=False):
    """The two-file layout of before: <id>.pbtxt, then <id>.json."""
    version = Version(f"{n:05d}-20240101T00000{n}000000Z", "m", 1_700_000_000.0 + n, Action(action))
    folder = root / "m"
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / f"{version.id}.pbtxt", text)
    if kill_between:
        die()
    write_text_atomic(folder / f"{version.id}.json", json.dumps(asdict(version), indent=1) + "\n")


if point == "legacy":
    legacy_record(1, "base\n", "baseline")
    legacy_record(2, "first\n", "apply")
    legacy_record(3, "second\n", "apply", kill_between=True)
store.record("m", "base\n", Action.BASELINE)
store.record("m", "first\n", Action.APPLY)
real_replace = os.replace
if point == "temporary":  # the temporary file is written and flushed; the kill lands before the rename
    os.replace = die
elif point == "renamed":  # the rename happened; the kill lands before record() returns
    os.replace = lambda *a: (real_replace(*a), die())
store.record("m", "second\n", Action.APPLY, note="killed while recording")
print("not killed")
'''


def _killed_child(root, point):
    """Run the child until it SIGKILLs itself at point; return the root it wrote."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root), point], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == -signal.SIGKILL, f"the child was not killed: rc {done.returncode}, {done.stderr[-2000:]}"
    return root


def test_a_kill_after_the_temporary_file_loses_only_that_version(tmp_path):
    root = _killed_child(tmp_path / "h", "temporary")
    leftovers = [p.name for p in (root / "m").iterdir() if p.name.endswith(".tmp")]
    assert leftovers, f"the kill should land after the temporary file was written: {sorted(os.listdir(root / 'm'))}"
    store = ConfigHistory(root)
    versions = store.versions("m")
    assert [store.text("m", v.id) for v in versions] == ["base\n", "first\n"], versions
    assert store.problems("m") == []  # a temporary file is not a version: nothing was half-recorded
    assert store.text("m", store.undo_target("m").id) == "base\n"
    again = store.record("m", "second\n", Action.APPLY)
    assert again.id.startswith("00003-") and [v.id for v in store.stack("m")][-1] == again.id


def test_a_kill_after_the_rename_keeps_the_whole_version(tmp_path):
    store = ConfigHistory(_killed_child(tmp_path / "h", "renamed"))
    versions = store.versions("m")
    assert [store.text("m", v.id) for v in versions] == ["base\n", "first\n", "second\n"], versions
    assert versions[-1].note == "killed while recording" and store.problems("m") == []
    assert store.text("m", store.undo_target("m").id) == "first\n"


def test_old_two_file_histories_are_read_and_a_half_written_version_is_skipped(tmp_path):
    root = _killed_child(tmp_path / "h", "legacy")
    assert any(p.suffix == ".pbtxt" for p in (root / "m").iterdir())
    store = ConfigHistory(root)
    versions = store.versions("m")
    assert [store.text("m", v.id) for v in versions] == ["base\n", "first\n"], versions
    problems = store.problems("m")  # the old version killed between its two files
    assert [p.name[:5] for p in problems] == ["00003"] and "incomplete" in problems[0].message, problems
    assert str(problems[0].path) not in str(problems[0])  # what a page shows names the version, not the file
    with pytest.raises(HistoryError, match="cannot be read: incomplete"):
        store.text("m", problems[0].name)
    assert store.undo_target("m") == versions[0]
    newer = store.record("m", "second\n", Action.APPLY)  # the new layout goes on after the old one
    assert newer.id.startswith("00004-") and store.undo_target("m") == versions[1]
    assert sorted(p.suffix for p in (root / "m").iterdir()) == [".json", ".json", ".json", ".pbtxt", ".pbtxt", ".pbtxt"]


_NOWHERE = Endpoint("http://127.0.0.1:9", "127.0.0.1:9", "http://127.0.0.1:9/metrics")  # history needs no server


def test_the_config_service_reports_a_broken_history_without_raising(tmp_path):
    repo = tmp_path / "repo"
    (repo / "m").mkdir(parents=True)
    (repo / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    root = _killed_child(tmp_path / "h", "legacy")
    service = ConfigService(_NOWHERE, repo, history=ConfigHistory(root))
    assert service.undo_blocked("m") is None  # versions 1 and 2 remain: one step back is possible
    assert [v.id[:5] for v in service.history("m")] == ["00001", "00002"]
    assert [p.name[:5] for p in service.history_problems("m")] == ["00003"]
    service._baseline("m")  # what serves differs from the last version: recorded as a baseline, no error
    assert service.history_store.text("m", service.history("m")[-1].id) == 'name: "m"\nbackend: "python"\n'
    (tmp_path / "not-a-folder").write_text("x")
    unwritable = ConfigService(_NOWHERE, repo, history=ConfigHistory(tmp_path / "not-a-folder"))
    assert "nothing to undo" in unwritable.undo_blocked("m")
    with pytest.raises(HistoryError, match="could not be written"):
        unwritable._baseline("m")


def test_apply_and_undo_on_the_real_server_go_on_over_a_killed_write(service, triton, restore_model, tmp_path):
    restore_model("gpu_sim")
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    original = path.read_text()
    killed = _killed_child(tmp_path / "killed", "legacy")  # an old version's text written, its note never
    folder = service.history_store.folder("gpu_sim")
    folder.mkdir(parents=True, exist_ok=True)
    for orphan in (killed / "m").glob("00003-*.pbtxt"):
        orphan.rename(folder / orphan.name)
    assert service.undo_blocked("gpu_sim") and "nothing to undo" in service.undo_blocked("gpu_sim")
    applied = service.apply("gpu_sim", set_instance_group(service.current("gpu_sim"), InstanceGroup(2, Kind.CPU)))
    assert applied.version_id.startswith("00005-") and service.undo_blocked("gpu_sim") is None  # 00004: baseline
    undone = service.undo("gpu_sim")
    assert path.read_text() == original == undone.new_text
    assert [p.name[:5] for p in service.history_problems("gpu_sim")] == ["00003"]
