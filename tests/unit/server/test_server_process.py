"""Process facts: a tritonserver's flags read from its command line (parse_flags); whose process is it
(descends_from), on a made-up /proc and on this one."""
from __future__ import annotations

import os
from pathlib import Path

from app.server.server_process import descends_from, parse_flags


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


def test_command_line_forms():
    flags = parse_flags(7, ["/opt/tritonserver/bin/tritonserver", "--model-store", "models", "--model-repository=/b",
                            "--model-control-mode", "POLL", "--repository-poll-secs=5", "--model-control-mode=poll"],
                        cwd=Path("/srv"))
    assert flags.is_tritonserver and flags.control_mode == "poll" and flags.poll_secs == "5"
    assert flags.repositories == (Path("/srv/models"), Path("/b"))
    default = parse_flags(8, ["tritonserver", "--model-repository=s3://bucket/models"], cwd=Path("/srv"))
    assert default.control_mode is None and default.repositories == (Path("s3://bucket/models"),)
    assert not parse_flags(9, ["python", "-m", "proxy"]).is_tritonserver
