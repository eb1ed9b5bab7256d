"""The dashboard's controller against the real server: start, change, stop, snapshots, subscribers."""
from __future__ import annotations

import threading
import time

import pytest

from loadgen.controller import LoadController
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec, Mode, TrafficClass
from loadgen.specfile import spec_to_dict
from loadgen.stats import Bucket

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


def wait_for(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_start_update_snapshot_stop(triton, new_controller):
    ctl = new_controller(triton.url)
    batches: list = []
    unsubscribe = ctl.subscribe(batches.append)
    ctl.start(LoadSpec(concurrency=2, duration_s=60, classes=(TrafficClass("web"),)))
    try:
        assert ctl.running
        with pytest.raises(RuntimeError, match="already"):
            ctl.start(LoadSpec())
        wait_for(lambda: ctl.snapshot().elapsed_s > 2.2)
        ctl.update(concurrency=6)
        assert ctl.snapshot().spec.concurrency == 6
        wait_for(lambda: ctl.snapshot().elapsed_s > 3.5)
        snap = ctl.snapshot(window_s=10)
        assert snap.running and snap.error is None and snap.started_at is not None
        rows = [r for r in snap.timeline if r["cls"] == "web"]
        assert len(rows) >= 3 and ROW_KEYS <= rows[0].keys()
        offsets = [r["t"] - snap.started_at for r in rows]  # whole seconds since the start, in order
        assert offsets == pytest.approx([round(o) for o in offsets]) and offsets == sorted(offsets)
        assert snap.summary["web"]["ok"] > 0 and "all" in snap.summary
    finally:
        ctl.stop()
    assert not ctl.running
    unsubscribe()
    assert sum(len(b) for b in batches) == ctl.snapshot().summary["all"]["sent"]
    assert all(isinstance(b, list) for b in batches)


def test_many_viewers_while_running(triton, new_controller):
    ctl = new_controller(triton.url)
    ctl.start(LoadSpec(mode=Mode.OPEN, rate=100, duration_s=30))
    errors: list = []

    def viewer():
        try:
            for _ in range(30):
                ctl.snapshot(window_s=5)
                ctl.update(rate=150)
                time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=viewer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctl.stop()
    assert not errors and not ctl.running and ctl.snapshot().spec.rate == 150


def test_run_ends_by_itself_at_its_bound_and_can_start_again(triton, new_controller):
    ctl = new_controller(triton.url)
    ctl.start(LoadSpec(concurrency=2, duration_s=0.5))
    assert ctl.wait(10) and not ctl.running
    first = ctl.snapshot()
    assert first.summary["all"]["ok"] > 0 and first.elapsed_s < 1.5
    ctl.start(LoadSpec(concurrency=1, duration_s=None, max_requests=5))
    assert ctl.wait(10)
    assert ctl.snapshot().summary["all"]["sent"] == 5


def test_a_failed_run_reports_its_error(triton, new_controller):
    ctl = new_controller(triton.url)
    ctl.start(LoadSpec(model="no_such_model", duration_s=1))
    assert ctl.wait(10)
    snap = ctl.snapshot()
    assert not snap.running and "no_such_model" in snap.error


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


def test_snapshot_before_any_run(new_controller):
    snap = new_controller("http://127.0.0.1:9").snapshot()
    assert not snap.running and snap.spec is None and snap.timeline == []


def test_a_new_run_keeps_the_earlier_runs_rows_and_windows_span_both(triton, new_controller):
    ctl = new_controller(triton.url)
    ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=2.5, classes=(TrafficClass("first"),)))
    assert ctl.wait(30)
    first = ctl.snapshot()
    ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=2.5, classes=(TrafficClass("second"),)))
    assert ctl.wait(30)
    snap = ctl.snapshot(window_s=60)
    classes = {r["cls"] for r in snap.timeline}
    assert {"first", "second"} <= classes, classes  # the first run's lines are still drawn
    assert all(r["models"] == frozenset({"gpu_sim"}) for r in snap.timeline)
    t0, t1 = first.started_at, snap.started_at + snap.elapsed_s + 1
    both = ctl.window(t0, t1)
    rows = [r for r in snap.timeline if r["cls"] == "all"]
    print(f"window over both runs: {both['all']['ok']} ok over {both['all']['seconds']} s; rows: "
          f"{sum(r['ok'] for r in rows)}")
    assert both["first"]["ok"] > 0 and both["second"]["ok"] > 0
    assert both["all"]["ok"] == sum(r["ok"] for r in rows if t0 <= r["t"] and r["t"] + 1 <= t1)
    assert ctl.window(t0, t1, model="mlp") == {}  # neither run sent to mlp


def _run(t0_epoch: float, seconds: int, per_second: int) -> dict:
    """Return a kept run as the history store saves it: `per_second` answered requests in each of its seconds."""
    out = {}
    for k in range(seconds):
        bucket = Bucket()
        for i in range(per_second):
            r = Record("default", "gpu_sim", 0, 0, k + i / per_second, k + i / per_second, 0.001, Outcome.OK, "", 1,
                       False)
            bucket.count_sent(r)
            bucket.count_end(r, True)
        out[k] = {"default": bucket.to_dict()}
    spec = LoadSpec(model="gpu_sim", mode=Mode.OPEN, rate=float(per_second))
    return {"t0_epoch": t0_epoch, "elapsed_s": float(seconds), "spec": spec_to_dict(spec), "seconds": out}


def test_a_window_after_a_restart_divides_by_the_seconds_traffic_ran_not_by_an_ended_runs():
    """Run A sent 100 req/s for 5 s and ended; run B 100 req/s from 3.3 s later. The last 10 s hold 8 whole seconds
    of B and none of A: the rate is 100 req/s (it read 80 when A's ended seconds counted in the window's length)."""
    ctl = LoadController("http://127.0.0.1:9")  # nothing is sent: the runs are restored, as after a dashboard restart
    try:
        assert ctl.restore([_run(1000.0, 5, 100), _run(1008.3, 10, 100)]) == 2
        row = ctl.window(1010.0, 1020.0)["all"]
        print(row["seconds"], row["ok"], row["throughput_rps"], row["span"])
        assert (row["ok"], row["seconds"], row["throughput_rps"]) == (800, pytest.approx(8.0), pytest.approx(100.0))
        both = ctl.window(1000.0, 1020.0)["all"]  # A's 5 s, B's 10 s (3.3 s apart: no overlap)
        assert (both["ok"], both["seconds"]) == (1500, pytest.approx(15.0)), both
        assert both["throughput_rps"] == pytest.approx(100.0), both
        gap = ctl.window(1000.0, 1012.0)["all"]  # A's 5 s, B's whole seconds 1008.3-1011.3; the gap between counts not
        assert (gap["ok"], gap["seconds"], gap["throughput_rps"]) == (800, pytest.approx(8.0), pytest.approx(100.0))
    finally:
        ctl.close()
