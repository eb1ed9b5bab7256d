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
from app.experiments.sweep.space import RATE, Choice, SearchSpace
from app.store.database import INTERRUPTED, ExperimentStore
from app.experiments.sweep.sweeper import SweepOptions, load_points, run_sweep, with_repeats
from app.paths import ROOT
from tests.helpers import copy_of_the_lab_repository, embedded_lab_serving, wait_until

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
    capacity = unbatched_capacity(lab.served_text(MODEL))
    low, high = round(0.4 * capacity), round(1.8 * capacity)
    space = SearchSpace(model=MODEL, instances=(), delays_us=(), max_batch_sizes=(1, 32), include_default=False,
                        load_kind=RATE, loads=(low, high), p99_budget_ms=150.0)
    result = run_sweep(lab, space, label="cost model", options=SweepOptions(max_windows=8))
    by_key = {p.key: p for p in result.points}
    summary = {k: (round(p.throughput or 0), round(p.p99 or 0, 1), p.stable, p.get("batch_hist")) for k, p in by_key.items()}
    print("capacity", round(capacity), "points", summary)
    assert result.status == "done", result.note
    best = result.best
    # gpu_sim serves max_batch_size 32 at the start: that choice is the starting config, named so
    assert best is not None and (best.choice, best.load) == (Choice(max_batch_size=32, start=True), high), summary
    assert result.recommendation.best is best and len(best.repeats) >= 1, result.recommendation.text
    overloaded = by_key[f"b1@{high}"]
    assert overloaded.p99 > space.p99_budget_ms, summary
    assert overloaded.throughput < 1.15 * capacity, f"more than the cost model allows: {summary}"
    assert best.throughput > 0.9 * high, summary  # batching keeps up with the whole offered rate
    assert parse_config(lab.served_text(MODEL)) == parse_config(
        lab.study(result.study_id).base_config), "the starting config does not serve again"


def test_a_config_offered_twice_is_measured_once_and_the_recommendation_rests_on_interleaved_repeats(lab):
    """gpu_sim serves 1 instance with a 500 µs delay: '1 instance, delay 500 µs' and the default are that one config,
    measured once under the starting config's name. Both configurations are then measured twice more, interleaved,
    and the recommendation states its margin over the other and how often each was measured. A resume afterwards
    measures nothing again."""
    space = SearchSpace(model=MODEL, instances=(1, 2), delays_us=(500,), include_default=True, loads=(4,),
                        p99_budget_ms=1000.0, adaptive=False)
    options = SweepOptions(max_windows=4, recheck_top=2, recheck_rounds=2)
    result = run_sweep(lab, space, label="offered twice", options=options)
    runs = lab.runs(study_id=result.study_id)
    first = [e.point for e in runs if e.kind == "point"]
    again = [e.point for e in runs if e.kind == "repeat"]
    study = lab.study(result.study_id)
    advice = result.recommendation
    print(f"{result.wall_s:.1f} s", first, again, study.result.get("rechecked"), advice and advice.text)
    assert result.status == "done", result.note
    assert first == ["i2-d500@4", "i1-d500-start@4"], "the starting config was measured twice or under another name"
    assert result.points[-1].choice.label == "1 instance, delay 500 µs (serving at start)"
    rechecked = study.result["rechecked"]  # the first pass's best, and the other if it was within the noise
    assert rechecked and set(rechecked) <= set(first), study.result
    assert again == rechecked * 2, "the repeats were not interleaved (A B A B)"
    assert {p.key: len(p.repeats) for p in result.points} == {k: 2 * (k in rechecked) for k in first}
    assert advice is not None and advice.best is result.best and advice.runner_up is not None, advice
    assert advice.runner_up.choice != advice.best.choice and advice.margin is not None and advice.margin >= 0
    times = 3 if advice.best.key in rechecked else 1  # 1: the repeats dethroned the first pass's best
    assert f"measured {times}×" in advice.text and " above " in advice.text, advice.text
    assert advice.runner_up.choice.label in advice.text and " %" in advice.text, advice.text
    assert advice.verdict in (("clear", "within the spread", "repeats disagree") if times == 3 else ("measured once",))
    assert study.result["recommendation"]["text"] == advice.text
    assert [p.key for p in with_repeats(lab, result.study_id, load_points(lab,
                                                                                      result.study_id))] == first

    lab.update_study(result.study_id, status=INTERRUPTED)
    resumed = run_sweep(lab, study_id=result.study_id)
    assert [e.id for e in lab.runs(study_id=result.study_id)] == [e.id for e in runs], "measured again"
    assert resumed.recommendation.text == advice.text


SWEEP_CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from app.lab.root import Lab
    from app.experiments.sweep.space import SearchSpace
    from app.experiments.sweep.sweeper import run_sweep
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
    after = load_points(lab, study.id)
    keys = [p.key for p in after]
    print("before", [p.key for p in before], "after", keys)
    assert result.status == "done", result.note
    assert sorted(keys) == sorted(f"i{i}-d0@{c}" for i in (1, 2) for c in (1, 2, 4)), keys
    assert len(keys) == len(set(keys)), f"a point was measured twice: {keys}"
    assert [(p.key, p.id) for p in after[:len(before)]] == [(p.key, p.id) for p in before]


def test_a_sweep_interrupted_by_a_server_restart_is_marked_so(tmp_path):
    with embedded_lab_serving(copy_of_the_lab_repository(tmp_path), tmp_path / "state") as lab:
        space = SearchSpace(model=MODEL, instances=(1, 2), delays_us=(0, 2000), loads=(1, 2, 4), adaptive=False)
        lab.jobs.start_sweep(space, "restart midway")
        wait_until(lambda: lab.job().progress is not None and lab.job().progress.done >= 1, 120,
                   "a first point")
        lab.restart()
        assert lab.wait_job(60), "the sweep did not stop after the restart"
        result = lab.job().result
        assert result is not None, lab.job().error
        study = lab.study(result.study_id)
        print("status", study.status, "note", study.note, "points", len(result.points))
        assert study.status == INTERRUPTED and "restart" in study.note
        assert 1 <= len(result.points) < space.points()
        assert lab.status().ready
        assert parse_config(lab.served_text(MODEL)) == parse_config(study.base_config), study.note
