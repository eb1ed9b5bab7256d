"""The server CLI on a venv whose numpy the wheel server's Python backend stub cannot serve with: refused before
anything starts."""
from __future__ import annotations

import os
import subprocess

from app.paths import ROOT
from app.server.free_ports import choose_ports, is_free
from tests.helpers import numpy2_python


def test_the_server_cli_refuses_numpy_2_before_starting_anything(tmp_path):
    """A venv whose site-packages hold numpy 2 (its metadata, ahead of the lab's packages): exit 1 with the fix,
    no tritonserver started (its ports stay free, no log written)."""
    python = numpy2_python(tmp_path)
    ports = choose_ports((None, None, None))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TBL_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [str(python), "-m", "app.server", *(f"--{k}-port={p}" for k, p in zip(("http", "grpc", "metrics"), ports))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "numpy 2.1.3" in done.stderr and 'pip install "numpy<2"' in done.stderr, done.stderr
    assert "tritonserver ready" not in done.stdout
    assert all(is_free(p) for p in ports)
    assert not list((tmp_path / "state").glob("logs/tritonserver-*.log"))
