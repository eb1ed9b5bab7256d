"""Where a study ran: a real git repository in a temp folder says which model files differ from its commit (git is
the real program here; whether a config is a simulated device: tests/unit/experiments/report/test_environment.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.experiments.report.environment import repository_state
from app.paths import MODEL_REPOSITORY
from tests.helpers import require_tool


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.fixture
def committed(tmp_path) -> Path:
    """Return a model repository (gpu_sim's and mlp's configs) inside a fresh git repository, committed."""
    require_tool("/usr/bin/git", "git")
    repo = tmp_path / "work" / "models"
    for model in ("gpu_sim", "mlp"):
        (repo / model).mkdir(parents=True)
        shutil.copy(MODEL_REPOSITORY / model / "config.pbtxt", repo / model / "config.pbtxt")
    (tmp_path / "work" / "README").write_text("outside the model repository\n")
    _git(tmp_path / "work", "init", "-q")
    _git(tmp_path / "work", "add", ".")
    _git(tmp_path / "work", "commit", "-q", "-m", "models")
    return repo


def test_a_repository_as_committed_has_no_changes(committed):
    state = repository_state(committed)
    print(state)
    assert state["repository"] == str(committed.resolve()) and state["repository_changes"] == []
    assert state["repository_commit"] and len(state["repository_commit"]) >= 7


def test_modified_added_renamed_and_deleted_model_files_are_named_relative_to_the_repository(committed):
    work = committed.parent
    (committed / "gpu_sim" / "config.pbtxt").write_text("max_batch_size: 8\n")  # what an Apply does
    (committed / "gpu_sim" / "configs").mkdir()
    (committed / "gpu_sim" / "configs" / "new name.pbtxt").write_text("max_batch_size: 4\n")  # untracked, a space
    _git(work, "mv", "models/mlp/config.pbtxt", "models/mlp/moved.pbtxt")
    (work / "README").write_text("changed, but not a model file\n")
    state = repository_state(committed)
    print(state)
    assert state["repository_changes"] == ["gpu_sim/config.pbtxt", "gpu_sim/configs/new name.pbtxt",
                                           "mlp/config.pbtxt", "mlp/moved.pbtxt"]


def test_a_folder_outside_git_or_without_git_says_unknown_and_no_folder_says_not_visible(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    assert repository_state(tmp_path / "m") == {"repository": str((tmp_path / "m").resolve()),
                                                "repository_commit": None, "repository_changes": None}
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))  # git missing: no crash, no guess
    assert repository_state(MODEL_REPOSITORY)["repository_changes"] is None
    assert repository_state(None) == {"repository": None, "repository_commit": None, "repository_changes": None}
