"""A stored trace-judged sweep on the Experiments page: its configurations' trace figures, the recommendation by the
trace rule, and the same as an HTML report to download (made-up scores; the live sweep is
tests/experiments/test_trace_sweep.py)."""
from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from app.experiments.sweep.space import Choice
from app.store.database import DONE, Experiment, Study
from app.experiments.trace.judge import TraceScore
from app.experiments.trace.play import TraceLoad
from app.experiments.trace.trace_sweep import KIND, RUN, TraceSweepPlan
from app.paths import ROOT
from tests.ui.apptest import RUN_TIMEOUT_S, texts

MODEL = "gpu_sim"


def _score(instances: int, over: int, goodput: float) -> TraceScore:
    return TraceScore(sla_ms=50.0, played_s=100.0, measured_s=102.0, sent=20_000, answered=20_000, failed=0,
                      good=int(goodput * 100), goodput_rps=goodput, p99_ms=30.0 + over, worst_minute_p99_ms=40.0 + over,
                      worst_minute_at_s=10.0, seconds_over=over, seconds=102, few_seconds=0, instances=instances,
                      instance_seconds=100.0 * instances)


def test_a_stored_trace_sweep_shows_its_recommendation_and_offers_its_report(lab):
    store = lab
    plan = TraceSweepPlan(MODEL, TraceLoad("flash_crowd", compress=36.0), sla_ms=50.0, instances=(1, 2))
    sid = store.add_study(Study(KIND, "made-up trace sweep", MODEL, {"plan": plan.to_dict()}, time.time() - 300,
                                status=DONE))
    store.update_study(sid, status=DONE, note="2 configurations played")
    for n, over, goodput in ((1, 14, 190.0), (2, 0, 270.0)):
        choice = Choice(instances=n)
        store.add_run(Experiment(f"{choice.label} on the trace", MODEL, f"# {n} instance(s)\n", 1.0, 2.0, kind=RUN,
                             status=DONE, study_id=sid, point=choice.key, seed=1,
                             outcome={"score": _score(n, over, goodput).to_dict(), "note": "", "choice": choice.key}))
    at = AppTest.from_file(str(ROOT / "lab_pages/experiments.py"), default_timeout=RUN_TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="exp:trace_sweep_pick").set_value(sid).run()
    assert not at.exception, [e.value for e in at.exception]
    pane = at.tabs[[t.label for t in at.tabs].index("Judged on a trace")]
    said = [t.replace("\\", "") for t in texts(pane.success)]
    assert any(t.startswith("Recommended: 2 instances") or "Recommended: 2 instance" in t for t in said), said
    downloads = {d.label: d for d in pane.get("download_button")}
    assert {"Recommended config.pbtxt", "HTML report"} <= set(downloads), list(downloads)
    table = pane.dataframe[0].value
    assert list(table["seconds over SLA"]) == ["14 of 102", "0 of 102"], table
