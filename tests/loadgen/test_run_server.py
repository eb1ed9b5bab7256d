"""Whole runs against the real server: bounds, open loop, shapes (and the variable-shape pitfall)."""
from __future__ import annotations

import time

from loadgen.outcome import Outcome
from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.loadgen.serverkit import add_bench_model, model_stats, reload_with, remove_bench_model, run_load


def test_closed_loop_run_stops_at_its_duration(triton):
    spec = LoadSpec(concurrency=4, duration_s=1.0, drain_s=2.0)
    start = time.monotonic()
    records, summary, run = run_load(triton, spec)
    wall = time.monotonic() - start
    assert summary["all"]["ok"] == len(records) > 50
    # the bound is checked just before a request is built and sent: a thread preempted in between (2 cores, a busy
    # neighbour) sends a few ms late, never a request begun after the end
    assert max(r.sent_s for r in records) < 1.05, max(r.sent_s for r in records)
    assert run.end_s < 1.5 and wall < 5.0  # model metadata, 1 s of load, a few ms of drain


def test_run_stops_at_its_request_count(triton):
    records, summary, _ = run_load(triton, LoadSpec(concurrency=3, duration_s=None, max_requests=40))
    assert len(records) == 40 and {r.outcome for r in records} == {Outcome.OK}


def test_open_loop_follows_its_rate(triton):
    spec = LoadSpec(mode=Mode.OPEN, rate=200.0, duration_s=1.5, seed=1)
    records, summary, _ = run_load(triton, spec)
    assert 200 <= len(records) <= 400  # Poisson: 300 expected, sd 17
    assert summary["all"]["ok"] == len(records)
    assert all(r.sent_s >= r.scheduled_s - 1e-6 for r in records)  # never early; late ones say so
    assert all(r.late == (r.lateness_s > 0.001) for r in records)


def test_variable_shapes_batch_worse_than_fixed(triton):
    add_bench_model(triton, "identity")

    def with_batching(config):
        config.dynamic_batching.max_queue_delay_microseconds = 3000

    def batch_size(shape: ShapeSpec) -> float:
        before = model_stats(triton, "identity")
        spec = LoadSpec(concurrency=8, duration_s=1.0, model="identity", classes=(TrafficClass(shape=shape),))
        records, summary, _ = run_load(triton, spec)
        assert summary["all"]["ok"] == len(records) > 0
        after = model_stats(triton, "identity")
        return (after["inference_count"] - before["inference_count"]) / (
            after["execution_count"] - before["execution_count"]
        )

    reload_with(triton, "identity", with_batching)
    try:
        fixed = batch_size(ShapeSpec(dims=(64,)))
        variable = batch_size(ShapeSpec("uniform", dims=(-1,), low=1, high=256))
    finally:
        remove_bench_model(triton, "identity")
    assert fixed > 2.5 and variable < 1.5, (fixed, variable)
