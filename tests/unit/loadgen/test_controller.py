"""The dashboard's controller without a run: a snapshot before any, and windows over runs restored as after a
dashboard restart (nothing is sent). Runs against the real server: tests/contract/loadgen/test_controller.py."""
from __future__ import annotations

import pytest

from loadgen.controller import LoadController
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from loadgen.stats import Bucket


def test_snapshot_before_any_run():
    ctl = LoadController("http://127.0.0.1:9")
    try:
        snap = ctl.snapshot()
    finally:
        ctl.close()
    assert not snap.running and snap.spec is None and snap.timeline == []


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
        assert (row["ok"], row["seconds"], row["throughput_rps"]) == (800, pytest.approx(8.0), pytest.approx(100.0))
        both = ctl.window(1000.0, 1020.0)["all"]  # A's 5 s, B's 10 s (3.3 s apart: no overlap)
        assert (both["ok"], both["seconds"]) == (1500, pytest.approx(15.0)), both
        assert both["throughput_rps"] == pytest.approx(100.0), both
        gap = ctl.window(1000.0, 1012.0)["all"]  # A's 5 s, B's whole seconds 1008.3-1011.3; the gap between counts not
        assert (gap["ok"], gap["seconds"], gap["throughput_rps"]) == (800, pytest.approx(8.0), pytest.approx(100.0))
    finally:
        ctl.close()
