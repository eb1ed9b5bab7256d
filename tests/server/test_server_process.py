"""Process facts from /proc: whose process is it (descends_from), on a made-up /proc and on this one."""
from __future__ import annotations

import os
from pathlib import Path

from app.server.server_process import descends_from


def _proc(tmp_path: Path, parents: dict[int, int]) -> Path:
    """A /proc holding a stat file per pid with its parent pid (and a command name with a space and a parenthesis)."""
    for pid, ppid in parents.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (tini (entry)) S {ppid} {pid} {pid} 0 -1\n")
    return tmp_path


def test_a_process_descends_from_itself_its_parent_and_their_ancestors_only(tmp_path):
    proc = _proc(tmp_path, {40: 1, 41: 40, 42: 41, 50: 1})  # 40 the container's entry point, 42 its tritonserver
    assert descends_from(42, 42, proc) and descends_from(42, 41, proc) and descends_from(42, 40, proc)
    assert not descends_from(42, 50, proc) and not descends_from(40, 41, proc)
    assert not descends_from(99, 40, proc)  # gone: not ours
    assert not descends_from(42, 0, proc)  # no container pid known


def test_this_process_descends_from_its_parent():
    assert descends_from(os.getpid(), os.getppid()) and not descends_from(os.getppid(), os.getpid())
