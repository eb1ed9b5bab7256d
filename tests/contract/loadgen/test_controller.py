"""The dashboard's controller against the real server: a run started, changed, watched by many viewers and stopped,
the next keeping the earlier rows; runs ending at their bounds on one worker process, the server counting what it
sent; a failed run's error; a decoupled model driven from the worker process."""
from __future__ import annotations

import os
import threading

import pytest

from loadgen.controller import LoadController
from loadgen.spec import LoadSpec, TrafficClass
from tests.contract.loadgen.serverkit import identity_spec, model_stats
from tests.helpers import wait_until

ROW_KEYS = {"t", "cls", "sent", "ok", "failed", "rejected", "timeouts", "late", "throughput_rps", "goodput_rps",
            "p50_ms", "p90_ms", "p95_ms", "p99_ms"}


@pytest.fixture
def new_controller():
    """Make controllers whose worker processes end after the test."""
    made: list[LoadController] = []

    def make(url: str) -> LoadController:
        made.append(LoadController(url))
        return made[-1]

    yield make
    for ctl in made:
        ctl.close()


def test_a_run_is_changed_watched_and_stopped_and_the_next_keeps_its_rows(triton, new_controller):
    ctl = new_controller(triton.url)
    batches: list = []
    unsubscribe = ctl.subscribe(batches.append)
    ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=60, classes=(TrafficClass("web"),)))
    errors: list = []

    def viewer():
        try:
            for _ in range(30):
                ctl.snapshot(window_s=5)
                ctl.update(concurrency=6)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    try:
        assert ctl.running
        with pytest.raises(RuntimeError, match="already"):
            ctl.start(LoadSpec())
        viewers = [threading.Thread(target=viewer) for _ in range(4)]
        for t in viewers:
            t.start()
        for t in viewers:
            t.join()
        assert not errors and ctl.snapshot().spec.concurrency == 6
        wait_until(lambda: ctl.snapshot().elapsed_s > 2.2, what="two whole seconds of the run")
        snap = ctl.snapshot(window_s=10)
        assert snap.running and snap.error is None and snap.started_at is not None
        rows = [r for r in snap.timeline if r["cls"] == "web"]
        assert len(rows) >= 2 and ROW_KEYS <= rows[0].keys()
        offsets = [r["t"] - snap.started_at for r in rows]  # whole seconds since the start, in order
        assert offsets == pytest.approx([round(o) for o in offsets]) and offsets == sorted(offsets)
        assert snap.summary["web"]["ok"] > 0 and "all" in snap.summary
    finally:
        ctl.stop()
    assert not ctl.running
    first = ctl.snapshot()
    unsubscribe()
    assert sum(len(b) for b in batches) == first.summary["all"]["sent"]
    assert all(isinstance(b, list) for b in batches)
    ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=2.0, classes=(TrafficClass("second"),)))
    assert ctl.wait(30)
    snap = ctl.snapshot(window_s=60)
    classes = {r["cls"] for r in snap.timeline}
    assert {"web", "second"} <= classes, classes  # the first run's lines are still drawn
    assert all(r["models"] == frozenset({"gpu_sim"}) for r in snap.timeline)
    t0, t1 = first.started_at, snap.started_at + snap.elapsed_s + 1
    both = ctl.window(t0, t1)
    rows = [r for r in snap.timeline if r["cls"] == "all"]
    assert both["web"]["ok"] > 0 and both["second"]["ok"] > 0
    assert both["all"]["ok"] == sum(r["ok"] for r in rows if t0 <= r["t"] and r["t"] + 1 <= t1)
    assert ctl.window(t0, t1, model="mlp") == {}  # neither run sent to mlp


def test_runs_end_at_their_bounds_on_one_worker_process_and_the_server_counts_what_they_sent(triton, identity):
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
        ctl.start(identity_spec(concurrency=1, duration_s=0.5))  # ends by itself at its duration
        assert ctl.wait(30) and not ctl.running
        timed = ctl.snapshot().summary["all"]
        assert timed["ok"] > 0 and timed["sent"] == timed["ok"]
        ctl.start(LoadSpec(model="no_such_model", duration_s=1))
        assert ctl.wait(30)
        failed = ctl.snapshot()
        assert not failed.running and "no_such_model" in failed.error
        ctl.start(identity_spec(concurrency=4, duration_s=60))  # the same worker serves the next run
        wait_until(lambda: ctl.snapshot().summary.get("all", {}).get("ok", 0) > 100, what="the last run's answers")
        ctl.update(concurrency=1)
        assert ctl.worker.pid == pid
        ctl.stop()
        assert not ctl.running
        last = ctl.snapshot().summary["all"]
    finally:
        ctl.close()
    served = model_stats(triton, "identity")["inference_count"] - before
    assert served == 300 + timed["ok"] + last["ok"] and last["sent"] == last["ok"]
    wait_until(lambda: not _alive(pid), 10, "worker exit after close()")
    ctl.start(identity_spec(concurrency=1, duration_s=None, max_requests=20))  # at once on a new worker: the old
    try:                                                                       # one's end is not this run's
        assert ctl.wait(30) and ctl.snapshot().error is None and ctl.snapshot().summary["all"]["ok"] == 20
        assert ctl.worker.pid not in (None, pid)
    finally:
        ctl.close()


def test_a_decoupled_model_is_driven_from_the_worker_process(triton, new_controller, monkeypatch, tmp_path):
    # The worker finds the server's gRPC stream from TRITON_GRPC_URL (a controller given no gRPC address).
    monkeypatch.setenv("TRITON_GRPC_URL", triton.endpoint.grpc_url)
    data = tmp_path / "length.json"
    data.write_text('{"data": [{"LENGTH": [4]}]}')
    ctl = new_controller(triton.url)
    gen = TrafficClass("gen", data=str(data))
    ctl.start(LoadSpec(model="token_sim", concurrency=4, duration_s=1.5, classes=(gen,)))
    assert ctl.wait(20), "the run against a decoupled model hung"
    snap = ctl.snapshot()
    row = snap.summary["all"]
    assert snap.error is None and row["ok"] > 10 and row["failed"] == 0, (snap.error, row)
    # every generation's 4 tokens came back through the worker's pipe into the statistics
    assert row["responses"] == 4 * row["ok"] and row["first_n"] == row["gap_n"] == row["ok"], row


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
