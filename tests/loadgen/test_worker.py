"""The generator in its own process: records over the pipe, one worker for many runs, death and exit handled,
pacing untouched by a busy dashboard process."""
from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from loadgen.controller import LoadController
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.run import LoadRun
from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.worker import WorkerProcess, decode, encode
from tests.helpers import wait_until
from tests.loadgen.serverkit import add_bench_model, model_stats, remove_bench_model


@pytest.fixture(scope="module")
def identity(triton):
    add_bench_model(triton, "identity")
    yield
    remove_bench_model(triton, "identity")


def identity_spec(**kw) -> LoadSpec:
    return LoadSpec(model="identity", classes=(TrafficClass("c", shape=ShapeSpec(dims=(16,))),), **kw)


def test_records_cross_the_pipe_unchanged():
    records = [Record("web", "gpu_sim", 2, 7, 0.25, 0.2512, 0.0031, Outcome.REJECTED, "queue_full", 2, True),
               Record("x", "m", 0, 0, 1.0, 1.0, 0.5, Outcome.OK, "", 1, False)]
    assert decode(encode(records)) == records


def test_the_dashboards_runs_go_out_from_one_worker_process_and_its_records_come_back(triton, identity):
    before = model_stats(triton, "identity")["inference_count"]
    ctl = LoadController(triton.url)
    batches: list = []
    ctl.subscribe(batches.append)
    try:
        ctl.start(identity_spec(concurrency=2, duration_s=None, max_requests=300))
        assert ctl.wait(30)
        pid = ctl.worker.pid
        assert pid is not None and pid != os.getpid()
        first = ctl.snapshot()
        assert first.error is None and first.summary["all"]["sent"] == 300 and first.started_at is not None
        assert sum(len(b) for b in batches) == 300
        ctl.start(identity_spec(concurrency=4, duration_s=60))  # the same worker serves the next run
        wait_until(lambda: ctl.snapshot().summary.get("all", {}).get("ok", 0) > 100, what="second run answers")
        ctl.update(concurrency=1)
        assert ctl.worker.pid == pid
        ctl.stop()
        assert not ctl.running
        second = ctl.snapshot().summary["all"]
    finally:
        ctl.close()
    served = model_stats(triton, "identity")["inference_count"] - before
    print(f"worker {pid}: runs of 300 and {second['sent']} requests; the server counted {served}")
    assert served == 300 + second["ok"] and second["sent"] == second["ok"]
    wait_until(lambda: not _alive(pid), 10, "worker exit after close()")
    ctl.start(identity_spec(concurrency=1, duration_s=None, max_requests=20))  # at once on a new worker: the old
    try:                                                                       # one's end is not this run's
        assert ctl.wait(30) and ctl.snapshot().error is None and ctl.snapshot().summary["all"]["ok"] == 20
    finally:
        ctl.close()


def test_a_prestarted_worker_says_when_it_is_ready_and_a_new_process_says_it_again():
    worker = WorkerProcess()
    assert not worker.wait_ready(0.01)  # none started yet
    try:
        worker.prestart()
        assert worker.wait_ready(60), "the worker process never said it was ready"
        first = worker.pid
        threads = len(os.listdir(f"/proc/{first}/task"))
        assert threads >= 3, threads  # main, commands, events (and the pools its libraries start at import)
        os.kill(first, signal.SIGKILL)  # a process this test started
        wait_until(lambda: worker.pid is None, 10, "the killed worker to be seen gone")
        assert not worker.wait_ready(0.01)  # the dead process's "ready" is not the next one's
        worker.prestart()
        assert worker.wait_ready(60) and worker.pid not in (None, first)
    finally:
        worker.close()


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


def test_a_busy_dashboard_process_does_not_disturb_the_workers_pacing(triton, identity):
    """A Python thread spinning in this process (as Streamlit's script runs do) takes the interpreter's lock:
    the same open loop run on a thread here is late; run by the worker it is not."""
    spec = identity_spec(mode=Mode.OPEN, rate=300.0, duration_s=2.0)
    stop = threading.Event()

    def spin():
        x = 0
        while not stop.is_set():
            for _ in range(1000):
                x += 1

    hog = threading.Thread(target=spin, daemon=True)
    hog.start()
    try:
        worker_records: list = []
        ctl = LoadController(triton.url)
        ctl.subscribe(worker_records.extend)
        try:
            ctl.start(spec)
            assert ctl.wait(30)
        finally:
            ctl.close()
        here: list = []
        run = LoadRun(spec, triton.url, [here.extend])
        thread = threading.Thread(target=lambda: asyncio.run(run.run()))
        thread.start()
        thread.join(60)
    finally:
        stop.set()
        hog.join()
    out, inside = _lateness(worker_records), _lateness(here)
    print(f"late share / median lateness: worker {out[0]:.2f} / {out[1] * 1e3:.2f} ms, "
          f"a thread of this process {inside[0]:.2f} / {inside[1] * 1e3:.2f} ms")
    # Measured (5 runs, 2 beside stress-ng --cpu 1): worker 0.07-0.20 late, median 0.15-0.34 ms; in-process
    # 0.88-1.00 late, median 4.4 ms - 5.9 s. In a quiet pass beside another quiet test (clean clone of 77ddf23) the
    # worker was 0.40 late (over 1 ms) with a median of 0.62 ms against 1.00 and 2.9 s: a share over 1 ms moves with
    # the neighbour, so the worker's claim is its median, under a 300/s arrival gap's 3.3 ms. Then 11 runs alone:
    # quiet, worker median 0.17-0.33 ms against 3.6-10.3 s; beside stress-ng --cpu 1, 0.12-0.37 ms against 3.7-12.6
    # ms; --cpu 2, 0.26-0.40 ms against 17-139 ms (in-process / worker medians: at least 10x; across runs 6x).
    assert out[1] <= 0.002 and inside[1] >= 4 * out[1] and inside[0] >= 2 * out[0]


def _lateness(records: list) -> tuple[float, float]:
    first = sorted(r.lateness_s for r in records if r.attempt == 1)
    assert len(first) > 100, f"only {len(first)} requests"
    return sum(r.late for r in records if r.attempt == 1) / len(first), first[len(first) // 2]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
