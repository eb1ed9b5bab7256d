"""Sweeps on the real server: the operating point the cost model implies, resume after a crash, interruption."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from app.config.model_config import parse_config
from app.config.read import parameters_of
from app.experiments.space import RATE, Choice, SearchSpace
from app.experiments.store import INTERRUPTED, ExperimentStore
from app.experiments.sweep import SweepOptions, load_points, run_sweep
from app.paths import ROOT
from tests.helpers import embedded_lab, wait_until

MODEL = "gpu_sim"


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def unbatched_capacity(config_text: str) -> float:
    """Return requests/s one instance serves at batch size 1, from the simulated device's cost parameters.

    An execution sleeps the launch overhead and the input copy, computes on the device, copies the output:
    INPUT and OUTPUT are 256 FP32 values, 1 KiB each.
    """
    p = {k: float(v) for k, v in parameters_of(parse_config(config_text)).items() if k != "model_kind"}
    per_request_us = p["launch_overhead_us"] + 2 * p["copy_us_per_kib"] + p["compute_us_batch1"]
    return 1e6 / per_request_us


def test_a_small_sweep_finds_the_operating_point_the_cost_model_implies(lab):
    """Without batching one instance serves at most 1 / (launch + copies + compute) requests/s; an open loop at
    twice that overflows its queue. With batching the same rate is a fraction of capacity. So the operating point
    is batching at the high rate, and the unbatched config at the high rate is outside the SLA."""
    capacity = unbatched_capacity(lab.config.current_text(MODEL))
    low, high = round(0.4 * capacity), round(1.8 * capacity)
    space = SearchSpace(model=MODEL, instances=(), delays_us=(), max_batch_sizes=(1, 32), include_default=False,
                        load_kind=RATE, loads=(low, high), p99_budget_ms=150.0)
    result = run_sweep(lab, space, label="cost model", options=SweepOptions(max_windows=8))
    by_key = {p.key: p for p in result.points}
    summary = {k: (round(p.throughput or 0), round(p.p99 or 0, 1), p.stable, p.get("batch_hist")) for k, p in by_key.items()}
    print("capacity", round(capacity), "points", summary)
    assert result.status == "done", result.note
    best = result.best
    assert best is not None and (best.choice, best.load) == (Choice(max_batch_size=32), high), summary
    overloaded = by_key[f"b1@{high}"]
    assert overloaded.p99 > space.p99_budget_ms, summary
    assert overloaded.throughput < 1.15 * capacity, f"more than the cost model allows: {summary}"
    assert best.throughput > 0.9 * high, summary  # batching keeps up with the whole offered rate
    assert parse_config(lab.config.current_text(MODEL)) == parse_config(
        lab.experiments.study(result.study_id).base_config), "the starting config does not serve again"


SWEEP_CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from app.lab import Lab
    from app.experiments.space import SearchSpace
    from app.experiments.sweep import run_sweep
    lab = Lab.create({{"TRITON_URL": {url!r}, "TRITON_METRICS_URL": {metrics!r}, "TRITON_GRPC_URL": {grpc!r},
                      "TRITON_MODEL_REPOSITORY": {repo!r}, "TRITON_CONTROL_KEY": {key!r}}})
    space = SearchSpace(model="gpu_sim", instances=(1, 2), delays_us=(0,), include_default=False,
                        loads=(1, 2, 4), p99_budget_ms=1000.0, adaptive=False)
    run_sweep(lab, space, label="killed midway")
""")


def test_a_sweep_killed_midway_is_marked_interrupted_and_resumes_without_repeating_points(lab, triton, tmp_path):
    child = subprocess.Popen(
        [sys.executable, "-c", SWEEP_CHILD.format(root=str(ROOT), url=triton.url, metrics=triton.endpoint.metrics_url,
                                                  grpc=triton.endpoint.grpc_url, repo=str(triton.repo),
                                                  key=triton.endpoint.control_key)],
        env={**os.environ, "TBL_STATE_DIR": str(tmp_path)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    store = ExperimentStore(tmp_path / "experiments.sqlite")
    try:
        wait_until(lambda: store.studies(kind="sweep") and len(load_points(store, store.studies()[0].id)) >= 2,
                   120, "two points of the child's sweep")
    finally:
        child.send_signal(signal.SIGKILL)
        out = child.communicate(timeout=30)[0].decode(errors="replace")
    study = store.studies(kind="sweep")[0]
    before = load_points(store, study.id)
    assert 2 <= len(before) < 6, out[-2000:]
    reopened = ExperimentStore(tmp_path / "experiments.sqlite")  # the store survives reopening
    assert reopened.study(study.id).status == INTERRUPTED, "a sweep whose process died still says running"
    assert "ended before it finished" in reopened.study(study.id).note

    result = run_sweep(lab, study_id=study.id)
    after = load_points(lab.experiments, study.id)
    keys = [p.key for p in after]
    print("before", [p.key for p in before], "after", keys)
    assert result.status == "done", result.note
    assert sorted(keys) == sorted(f"i{i}-d0@{c}" for i in (1, 2) for c in (1, 2, 4)), keys
    assert len(keys) == len(set(keys)), f"a point was measured twice: {keys}"
    assert [(p.key, p.id) for p in after[:len(before)]] == [(p.key, p.id) for p in before]


def test_a_sweep_interrupted_by_a_server_restart_is_marked_so(tmp_path, monkeypatch):
    lab = embedded_lab(tmp_path, monkeypatch)
    try:
        space = SearchSpace(model=MODEL, instances=(1, 2), delays_us=(0, 2000), loads=(1, 2, 4), adaptive=False)
        lab.jobs.start_sweep(space, "restart midway")
        wait_until(lambda: lab.jobs.state.progress is not None and lab.jobs.state.progress.done >= 1, 120,
                   "a first point")
        lab.restart()
        assert lab.jobs.wait(60), "the sweep did not stop after the restart"
        result = lab.jobs.state.result
        assert result is not None, lab.jobs.state.error
        study = lab.experiments.study(result.study_id)
        print("status", study.status, "note", study.note, "points", len(result.points))
        assert study.status == INTERRUPTED and "restart" in study.note
        assert 1 <= len(result.points) < space.points()
        assert lab.status().ready
        assert parse_config(lab.config.current_text(MODEL)) == parse_config(study.base_config), study.note
    finally:
        lab.close()
