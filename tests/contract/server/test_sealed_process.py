"""The dashboard process is sealed: another process of the same (non-root) user cannot read its environment."""
from __future__ import annotations

import os
import pwd
import subprocess
import textwrap

import pytest

from tests.helpers import require_tool

SYSTEM_PYTHON = "/usr/bin/python3"  # runs as another user (the lab's interpreter lives under /root)

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from app.server.launcher import seal_process
    if {seal}:
        assert seal_process({{}})
    print("ready", flush=True)
    time.sleep(30)
""")

READER = textwrap.dedent("""
    import sys
    try:
        data = open(f"/proc/{sys.argv[1]}/environ", "rb").read()
    except PermissionError:
        print("refused")
    else:
        print("read:" + str(b"TBL_OPERATOR_TOKEN=" in data))
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="running two processes as another user needs root (CI runs as root)")
@pytest.mark.parametrize("seal,expected", [(True, "refused"), (False, "read:True")])
def test_a_process_of_the_same_user_cannot_read_the_sealed_dashboard_s_environment(seal, expected):
    """Both run as `nobody` (root could read anything): unsealed, the reader finds the token; sealed, it cannot."""
    from app.paths import ROOT  # noqa: PLC0415

    require_tool(SYSTEM_PYTHON, "python3")
    nobody = pwd.getpwnam("nobody")
    as_nobody = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    env = {"PATH": "/usr/bin:/bin", "TBL_OPERATOR_TOKEN": "a-secret-of-sixteen+"}
    child = subprocess.Popen([SYSTEM_PYTHON, "-c", CHILD.format(root=str(ROOT), seal=seal)], env=env,
                             stdout=subprocess.PIPE, text=True, cwd="/", **as_nobody)
    try:
        assert child.stdout.readline().strip() == "ready"
        reader = subprocess.run([SYSTEM_PYTHON, "-c", READER, str(child.pid)], capture_output=True, text=True,
                                timeout=30, env={"PATH": "/usr/bin:/bin"}, cwd="/", **as_nobody)
        assert reader.stdout.strip() == expected, reader.stdout + reader.stderr
    finally:
        child.kill()
        child.wait()
