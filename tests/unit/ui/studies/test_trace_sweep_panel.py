"""Trace-judged sweeps on the Experiments page (app/ui/studies/trace_sweep_panel.py) on the FakeLab: one started from
the form runs, shows its progress and cancels; a stored one (made-up scores) shows its configurations' trace figures,
the recommendation by the trace rule and its report; a damaged one says so."""
from __future__ import annotations

from app.experiments.sweep.space import Choice
from app.experiments.trace.judge import TraceScore
from app.experiments.trace.play import TraceLoad
from app.experiments.trace.trace_sweep import KIND, RUN, TraceSweepPlan
from app.store.database import CANCELLED, DONE, Experiment, Study
from tests.unit.ui.apptest import button, no_exception, ok, open_page, run_page, soon, texts, widget
from tests.unit.ui.studies import study_samples

MODEL = "gpu_sim"
TAB = 1  # Judged on a trace


def _score(instances: int, over: int, goodput: float) -> TraceScore:
    return TraceScore(sla_ms=50.0, played_s=100.0, measured_s=102.0, sent=20_000, answered=20_000, failed=0,
                      good=int(goodput * 100), goodput_rps=goodput, p99_ms=30.0 + over, worst_minute_p99_ms=40.0 + over,
                      worst_minute_at_s=10.0, seconds_over=over, seconds=102, few_seconds=0, instances=instances,
                      instance_seconds=100.0 * instances)


def test_a_stored_trace_sweep_shows_its_recommendation_and_offers_its_report(on_fake):
    plan = TraceSweepPlan(MODEL, TraceLoad("flash_crowd", compress=36.0), sla_ms=50.0, instances=(1, 2))
    sid = on_fake.add_study(Study(KIND, "made-up trace sweep", MODEL, {"plan": plan.to_dict()}, 1.0, status=DONE))
    on_fake.update_study(sid, status=DONE, note="2 configurations played")
    for n, over, goodput in ((1, 14, 190.0), (2, 0, 270.0)):
        choice = Choice(instances=n)
        on_fake.add_run(Experiment(f"{choice.label} on the trace", MODEL, f"# {n} instance(s)\n", 1.0, 2.0, kind=RUN,
                                   status=DONE, study_id=sid, point=choice.key, seed=1,
                                   outcome={"score": _score(n, over, goodput).to_dict(), "note": "",
                                            "choice": choice.key}))
    pane = open_page("lab_pages/experiments.py").tabs[TAB]
    assert any(t.startswith("**Recommended: 2 instances**") for t in texts(pane.success)), texts(pane.success)
    assert {"Recommended config.pbtxt", "HTML report"} <= {d.label for d in pane.get("download_button")}
    assert list(pane.dataframe[0].value["seconds over SLA"]) == ["14 of 102", "0 of 102"]


def test_a_trace_judged_sweep_starts_shows_its_progress_and_cancels(on_fake):
    at = open_page("lab_pages/experiments.py")
    widget(at.multiselect, "Instance counts to play").set_value([1, 2])
    widget(at.number_input, "Compress (recorded s per played s)").set_value(900.0)
    ok(button(at, "Start trace-judged sweep").click().run())
    assert any(t.startswith("Trace-judged sweep started: 2 configurations, each playing") for t in texts(at.success))
    soon(lambda: on_fake.job().progress is not None, what="the trace sweep's progress")
    ok(at.run())
    assert at.get("progress"), "no progress bar"
    ok(at.button(key="exp:cancel").click().run())
    assert on_fake.wait_job(10)
    assert on_fake.studies(kind=KIND)[0].status == CANCELLED


def test_a_damaged_trace_sweep_says_so(on_fake):
    damaged = study_samples.damaged_studies(on_fake)
    at = run_page("lab_pages/experiments.py")
    no_exception(at.selectbox(key="exp:trace_sweep_pick").set_value(damaged["trace_wrong"]).run())
    assert any(f"Trace-judged sweep {damaged['trace_wrong']} cannot be read" in e for e in texts(at.tabs[TAB].error))
