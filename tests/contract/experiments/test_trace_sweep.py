"""A trace-judged sweep on the real server: every configuration plays the same seeded arrivals once, each is scored and
stored, one is picked, and the starting config serves again. (Which configuration holds the crowd, and by how much:
bench/study_claims.py's trace-sweep.)"""
from __future__ import annotations

import pytest

from app.config.edits import set_settings
from app.config.knobs import apply_knobs
from app.config.model_config import parse_config
from app.config.read import settings_of
from app.experiments.trace.play import TraceLoad
from app.experiments.trace.trace_sweep import TraceSweepPlan, load_runs, run_trace_sweep
from app.store.database import DONE

MODEL = "gpu_sim"


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def test_a_trace_judged_sweep_plays_each_configuration_once_scores_stores_and_restores(lab, tmp_path):
    config = lab.served_config(MODEL)
    lab.apply(MODEL, set_settings(config, apply_knobs(settings_of(config), {"max_batch_size": 4,
                                                                            "preferred_batch_size": ()})),
              "test: batch 4", confirm_contract=True)
    start = lab.served_text(MODEL)
    trace = tmp_path / "steps.csv"
    trace.write_text("t,rate\n0,50\n60,150\n120,50\n")  # three one-minute steps, played in 3 s at compress 60
    plan = TraceSweepPlan(MODEL, TraceLoad(str(trace), compress=60), sla_ms=100, instances=(1, 2), tolerance=0.25)
    result = run_trace_sweep(lab, plan, label="steps")
    print(result.note, [(r.choice.label, r.score) for r in result.runs], result.verdict and result.verdict.reason)
    assert result.status == DONE, result.note
    assert sorted(r.choice.instances for r in result.runs) == [1, 2]
    sent = {r.score.sent for r in result.runs}
    assert len(sent) == 1 and sent.pop() > 0, result.runs  # the same seeded arrivals for every configuration
    assert all(r.score.played_s == pytest.approx(3.0) and r.score.answered > 0 for r in result.runs), result.runs
    assert result.pick is not None and result.pick.choice.instances in (1, 2) and result.verdict.reason
    stored = lab.study(result.study_id)
    assert stored.kind == "trace_sweep" and stored.status == DONE and stored.result["pick"] == result.pick.choice.key
    assert [r.score for r in load_runs(lab, result.study_id)] == [r.score for r in result.runs]
    assert parse_config(lab.served_text(MODEL)) == parse_config(start)  # the starting config serves again
    assert not lab.traffic().running
