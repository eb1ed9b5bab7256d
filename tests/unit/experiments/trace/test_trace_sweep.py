"""A trace-judged sweep's plan: what cannot be played is refused, and a plan survives its stored form. (A whole one on a
real server: tests/contract/experiments/test_trace_sweep.py; which configuration holds a crowd: bench/study_claims.py.)"""
from __future__ import annotations

import pytest

from app.experiments.ab.comparison import ABPlan, Arm
from app.experiments.trace.play import TraceLoad
from app.experiments.trace.trace_sweep import TraceSweepPlan
from loadgen.specfile import spec_to_dict

MODEL = "gpu_sim"


def test_a_trace_plan_refuses_what_cannot_be_played():
    with pytest.raises(ValueError, match="rate_trace"):
        TraceSweepPlan(MODEL, TraceLoad("/no/such/trace.csv"), instances=(1,))
    with pytest.raises(ValueError, match="compress"):
        TraceLoad("flash_crowd", compress=0)
    with pytest.raises(ValueError, match="tolerance"):
        TraceSweepPlan(MODEL, TraceLoad("flash_crowd", compress=400), instances=(1,), tolerance=2)
    plan = TraceSweepPlan(MODEL, TraceLoad("flash_crowd", compress=400, scale=2), instances=(1, 3), delays_us=(0, 500))
    assert TraceSweepPlan.from_dict(plan.to_dict()) == plan
    assert len(plan.space().choices()) == 4 and plan.spec().duration_s == 9.0  # an hour at compress 400


def test_an_ab_on_a_trace_plays_it_whole_in_every_trial():
    spec = TraceLoad("flash_crowd", compress=400).spec(MODEL, 100, seed=3)  # an hour played in 9 s
    text = 'name: "gpu_sim"\nmax_batch_size: 4\ninstance_group { count: %d kind: KIND_CPU }\n'
    plan = ABPlan(MODEL, (Arm("one", text % 1), Arm("three", text % 3)), spec_to_dict(spec), trials=2, tolerance=0.25)
    assert (plan.trace, plan.trial_s, plan.warmup_s) == (True, 9.0, 0.0)  # measured: the played span, from its start
    assert plan.load_spec().duration_s == 9.0 and plan.sla_ms() == 100
