"""The load generator's worker process (python -m loadgen worker): it says when it is ready and starts with no secret
in its environment, refuses a load outside the limits table and keeps serving, ends its run with an error when it
dies, and stops its run and exits when the dashboard goes. Runs through it: test_controller.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path


from app.paths import ROOT
from loadgen.child_env import is_secret
from loadgen.controller import LoadController
from loadgen.spec import LoadSpec
from loadgen.specfile import spec_to_dict
from loadgen.worker import WorkerProcess
from tests.contract.loadgen.serverkit import identity_spec
from tests.helpers import wait_until
from tests.loadgen_data import LAB_ENVIRONMENT, SECRET_VALUES

INF = float("inf")


def test_a_prestarted_worker_says_when_it_is_ready_holds_no_secret_and_a_new_process_says_it_again(monkeypatch):
    for name, value in LAB_ENVIRONMENT.items():
        if is_secret(name, value):
            monkeypatch.setenv(name, value)
    worker = WorkerProcess()
    assert not worker.wait_ready(0.01)  # none started yet
    try:
        worker.prestart()
        assert worker.wait_ready(60), "the worker process never said it was ready"
        first = worker.pid
        threads = len(os.listdir(f"/proc/{first}/task"))
        assert threads >= 3, threads  # main, commands, events (and the pools its libraries start at import)
        # /proc/PID/environ: what the process started with, whatever it reads later (ready: its exec is done)
        raw = Path(f"/proc/{first}/environ").read_bytes()
        env = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
        assert "PATH" in env, f"the environment read is not the worker's: {sorted(env)}"
        leaked = {name for name, value in env.items() if value in SECRET_VALUES or is_secret(name, value)}
        assert not leaked, f"the worker got {sorted(leaked)}; its variables: {sorted(env)}"
        os.kill(first, signal.SIGKILL)  # a process this test started
        wait_until(lambda: worker.pid is None, 10, "the killed worker to be seen gone")
        assert not worker.wait_ready(0.01)  # the dead process's "ready" is not the next one's
        worker.prestart()
        assert worker.wait_ready(60) and worker.pid not in (None, first)
    finally:
        worker.close()


def test_the_worker_refuses_a_start_outside_the_table_and_keeps_serving():
    """A start command whose spec is outside the table ends at once with the reason; no run starts, and the worker
    still answers the next command (a malformed one here), so it is not wedged."""
    bad = spec_to_dict(LoadSpec(model="gpu_sim"))
    bad["concurrency"] = 1000
    lines = [{"op": "start", "url": "http://127.0.0.1:9", "spec": bad},
             {"op": "start", "url": "http://127.0.0.1:9", "spec": {**spec_to_dict(LoadSpec()), "rate": INF}}]
    text = "".join(json.dumps(c) + "\n" for c in lines)
    done = subprocess.run([sys.executable, "-m", "loadgen", "worker"], input=text, capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [e["ev"] for e in events] == ["ready", "end", "end"], (events, done.stderr[-2000:])
    events = events[1:]
    assert events[0]["error"].startswith("load refused: concurrency = 1000: concurrency must be between 0 and 256")
    assert "rate = inf" in events[1]["error"] and done.returncode == 0, events


def test_a_worker_that_dies_ends_its_run_with_an_error_and_the_next_run_gets_a_new_one(triton, identity):
    ctl = LoadController(triton.url)
    try:
        ctl.start(identity_spec(concurrency=2, duration_s=60))
        wait_until(lambda: ctl.snapshot().summary.get("all", {}).get("ok", 0) > 50, what="answers")
        pid = ctl.worker.pid
        os.kill(pid, signal.SIGKILL)  # a process this test's controller started
        assert ctl.wait(10), "the run did not end when its worker died"
        snap = ctl.snapshot()
        assert not snap.running and f"process {pid} exited" in snap.error, snap.error
        ctl.start(identity_spec(concurrency=1, duration_s=None, max_requests=20))
        assert ctl.wait(30) and ctl.snapshot().summary["all"]["ok"] == 20
        assert ctl.worker.pid not in (None, pid)
    finally:
        ctl.close()


def test_the_worker_stops_its_run_and_exits_when_the_dashboard_goes(triton, identity):
    worker = WorkerProcess()
    run = worker.start_run(triton.url, identity_spec(concurrency=2, duration_s=120), [])
    wait_until(lambda: run.t0_epoch is not None, what="run start")
    pid = worker.pid
    worker._proc.stdin.close()  # noqa: SLF001 - what a dashboard process's death does to the pipe
    wait_until(lambda: not _alive(pid), 15, "worker exit when its stdin closed")
    assert run.join(5) and run.error is None and run.elapsed_s() < 60


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
