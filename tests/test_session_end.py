"""The end of a test session (tests/conftest.py pytest_runtest_teardown): the session's servers are asked to stop all at
once, after the last test's own teardown, and a first-pass worker marks that it has ended once they have."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One test on the session's server and a hand-started one: its own teardown still finds both serving.
INNER = '''
from tests.server.hand_started import none_server  # noqa: F401


def test_both_serve(triton, none_server):
    assert triton.server.running() and none_server.proc.poll() is None


def test_the_last_ones_teardown_finds_them_serving(triton, none_server, request):
    def still_serving():
        logs = [triton.server.log_path.read_text(), none_server.log_path.read_text()]
        assert not any("Signal (15) received" in log for log in logs), "asked to stop before the test ended"
        assert triton.server.running() and none_server.proc.poll() is None
        (request.config.rootpath / "teardown-saw-them-serving").touch()
    request.addfinalizer(still_serving)
'''
WAITING = re.compile(r"^I\d{4} (\d\d:\d\d:\d\d\.\d+) .*\"Waiting for in-flight requests to complete\.\"", re.M)


def test_the_session_servers_stop_at_once_and_the_worker_marks_its_last_test(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # not this run's own marks, options or worker name: the inner session is a first pass of its own
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TBL_FIRST_PASS"))}
    env["TBL_FIRST_PASS_DONE"] = str(tmp_path / "done")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "1", "-q", "-p",
                          "no:cacheprovider", "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"),
                          "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_inner.py")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "done.gw0").exists(), sorted(p.name for p in tmp_path.iterdir())
    assert (tmp_path / "teardown-saw-them-serving").exists()
    # the worker marks its end once its servers have stopped (their logs' last writes), not while they stop
    logs = {log.name: log.stat().st_mtime for log in (tmp_path / "base").rglob("tritonserver-*.log")}
    marked = (tmp_path / "done.gw0").stat().st_mtime
    assert logs and marked >= max(logs.values()), f"marked at {marked:.3f}, the servers' logs last written at {logs}"
    # when each server began to stop, from its own log: one after another they began 2-3 s apart (a stop waits
    # for the Python stubs to unload, and the server looks for live models once a second)
    began = {}
    for log in (tmp_path / "base").rglob("tritonserver-*.log"):
        found = WAITING.search(log.read_text(errors="replace"))
        assert found, f"{log} has no stop in it"
        began[log.name] = datetime.strptime(found.group(1), "%H:%M:%S.%f")
    print(began)
    assert len(began) == 2, began
    spread = (max(began.values()) - min(began.values())).total_seconds()
    assert spread < 1.5, f"the servers began to stop {spread:.2f} s apart: {began}"


DYING = '''
import json
from pathlib import Path


def test_the_server_dies(triton):
    e = triton.endpoint
    Path(triton.repo.parents[2] / "before.json").write_text(json.dumps([e.http_url, e.grpc_url, e.metrics_url]))
    mlp = triton.repo / "mlp" / "config.pbtxt"
    mlp.write_text(mlp.read_text() + "\\n# a test's edit\\n")
    triton.server.proc.kill()
    triton.server.proc.wait(30)


def test_the_next_test_finds_it_serving(triton):
    from app.server.status import fetch_status
    ready = sorted(m.name for m in fetch_status(triton.endpoint).models if m.state == "READY")
    edited = "# a test's edit" in (triton.repo / "mlp" / "config.pbtxt").read_text()
    e = triton.endpoint
    Path(triton.repo.parents[2] / "seen.json").write_text(json.dumps({
        "urls": [e.http_url, e.grpc_url, e.metrics_url], "ready": ready, "edited": edited}))
'''


def test_a_session_server_that_dies_fails_that_test_and_serves_the_next_on_its_ports(tmp_path):
    """Triton 2.51 can die on a reload under load (ci320): the test it died in says so, and the worker's next test
    finds the session server serving again, on the same ports, its repository as the lab ships it."""
    (tmp_path / "test_inner.py").write_text(DYING)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TBL_FIRST_PASS"))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "1", "-q", "-p",
                          "no:cacheprovider", "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"),
                          "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_inner.py")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert re.search(r"\b2 passed\b.*\b1 error\b", run.stdout), run.stdout[-2000:]
    assert "ERROR at teardown of test_the_server_dies" in run.stdout
    assert "the session server died during this test and was started again" in run.stdout
    assert "tritonserver exited with code -9" in run.stdout
    seen = json.loads((tmp_path / "base" / "seen.json").read_text())
    assert not seen["edited"], "the repository was not put back"
    assert {"gpu_sim", "mlp"} <= set(seen["ready"]), seen
    died = list((tmp_path / "base").rglob("tritonserver-*.log.died-*"))
    assert len(died) == 1, died
    port = died[0].name.split("-")[1].split(".")[0]
    assert seen["urls"][0].endswith(f":{port}"), (seen["urls"], died)
    before = json.loads((tmp_path / "base" / "before.json").read_text())
    assert seen["urls"] == before, (before, seen["urls"])  # HTTP, gRPC and metrics on the ports they had
