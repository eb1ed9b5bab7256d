"""Whole runs against the real server: a closed loop ends at its request count and at its duration, an open loop
sends its schedule, never early, and says which sends went late. (How late a live open loop sends, and how its
closed loop compares with perf_analyzer's, are measurements: bench/vs_perf_analyzer.py.)"""
from __future__ import annotations

from loadgen.outcome import Outcome
from loadgen.spec import LoadSpec, Mode
from tests.contract.loadgen.serverkit import run_load


def test_a_closed_loop_run_ends_at_its_request_count_and_at_its_duration(triton):
    records, summary, _ = run_load(triton, LoadSpec(concurrency=3, duration_s=None, max_requests=40))
    assert len(records) == 40 == summary["all"]["ok"] and {r.outcome for r in records} == {Outcome.OK}
    records, summary, run = run_load(triton, LoadSpec(concurrency=4, duration_s=1.0, drain_s=2.0))
    assert summary["all"]["ok"] == len(records) > 0 and {r.outcome for r in records} == {Outcome.OK}
    assert run.end_s >= 1.0 and all(r.sent_s < run.end_s for r in records)  # it ran its second, then ended by itself


def test_an_open_loop_run_sends_its_schedule_never_early_and_marks_the_late_sends(triton):
    spec = LoadSpec(mode=Mode.OPEN, rate=200.0, duration_s=1.5, seed=1)
    records, summary, _ = run_load(triton, spec)
    assert 200 <= len(records) <= 400  # the seeded Poisson schedule's arrivals (300 expected, sd 17): each is sent
    assert summary["all"]["ok"] == len(records)
    assert all(r.sent_s >= r.scheduled_s - 1e-6 for r in records)  # never early; late ones say so
    assert all(r.late == (r.lateness_s > 0.001) for r in records)
    assert summary["all"]["late"] == sum(r.late for r in records)
