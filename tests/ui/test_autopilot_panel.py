"""The autopilot panel on the Instances page, drawn by Streamlit against the fixture server: off by default, turned
on from its form (bad bounds refused in words), a clearly marked mode while on, and off again with its study."""
from __future__ import annotations

from app.autopilot.job import KIND
from tests.ui.apptest import ok, open_page, wait_until, widget

PAGE = "lab_pages/instances.py"


def test_off_by_default_on_from_the_page_and_off_again(lab, restore_model):
    restore_model("gpu_sim")
    at = open_page(PAGE)
    assert not lab.job_running()
    assert any("turn on the autopilot" in e.label for e in at.expander), [e.label for e in at.expander]
    assert not any("AUTOPILOT ON" in w.value for w in at.warning)

    widget(at.number_input, "Fewest instances").set_value(3)
    widget(at.number_input, "Most instances").set_value(2)
    at.button(key="FormSubmitter:autopilot:instances:gpu_sim-Turn the autopilot on").click()
    at.run()
    said = [e.value.replace("\\", "") for e in at.error]  # literal() escapes Markdown marks
    assert said and "min_instances is 3, above max_instances 2; use min ≤ max" in said[0], said
    assert not lab.job_running()

    widget(at.number_input, "Fewest instances").set_value(1)
    widget(at.number_input, "Most instances").set_value(3)
    widget(at.number_input, "p99 SLA (ms)").set_value(80.0)
    at.button(key="FormSubmitter:autopilot:instances:gpu_sim-Turn the autopilot on").click()
    ok(at.run())
    try:
        assert lab.job_running() and lab.job().kind == KIND, lab.job()
        wait_until(lambda: lab.job().progress is not None, 30, "the autopilot's study")
        ok(at.run())
        banner = " ".join(w.value for w in at.warning)
        assert "AUTOPILOT ON" in banner and "p99 ≤ 80 ms with 1–3 instances" in banner, banner
        # no traffic: it judges nothing and changes nothing
        wait_until(lambda: lab.job().progress is not None and lab.job().progress.windows >= 1, 30,
                   "a first window")
        assert "waiting for enough answers" in lab.job().progress.current
        widget(at.button, "Turn the autopilot off").click()
        ok(at.run())
        wait_until(lambda: not lab.job_running(), 30, "the autopilot to stop")
    finally:
        lab.cancel_job(wait_s=30)
    ok(at.run())
    said = " ".join(w.value for w in at.info)
    study = lab.job().result.study_id
    assert "The autopilot is off after" in said and f"study {study}" in said, said
    stored = lab.study(study)
    assert stored.kind == KIND and stored.note == "turned off" and stored.result["changes"] == [], stored

    exp = open_page("lab_pages/experiments.py")  # the run is kept, and its windows replay to the same decisions
    assert any(f"Autopilot run {study} on" in i.value and "turned off" in i.value for i in exp.success), \
        [i.value for i in exp.success]
    widget(exp.button, "Replay its windows through the rules").click()
    ok(exp.run())
    said = [s.value for s in exp.success]
    n = len(stored.result["records"])
    assert f"Replayed {n} of {n} recorded windows: {n} decisions the same, word for word." in said, said
    lab.delete_study(study)  # later pages on this worker show no leftover study


def test_under_a_trace_it_can_size_ahead_of_it_and_says_so(lab, restore_model):
    from loadgen.rate_trace.trace_load import trace_load
    from loadgen.spec import LoadSpec, Mode, TrafficClass

    restore_model("gpu_sim")
    at = open_page(PAGE)
    box = widget(at.checkbox, "Add instances ahead of the trace the traffic plays")
    assert box.disabled, "no trace plays: nothing to size ahead of"
    base = LoadSpec(mode=Mode.OPEN, model="gpu_sim", rate=10.0, duration_s=60.0, classes=(TrafficClass(),))
    lab.start_traffic(trace_load(base, "flash_crowd", 30.0, 0.2))  # 14-90 req/s: light on a shared machine
    try:
        ok(at.run())
        box = widget(at.checkbox, "Add instances ahead of the trace the traffic plays")
        assert not box.disabled
        box.check()
        widget(at.number_input, "Requests/s one instance carries within the SLA (0: learn it live)").set_value(300.0)
        at.button(key="FormSubmitter:autopilot:instances:gpu_sim-Turn the autopilot on").click()
        ok(at.run())
        try:
            wait_until(lambda: lab.job().progress is not None, 30, "the autopilot's study")
            ok(at.run())
            banner = " ".join(w.value for w in at.warning).replace("\\", "")
            assert "adding instances ahead of the trace the traffic plays (flash_crowd)" in banner, banner
            assert lab.job().progress.forecast.startswith("the trace the traffic plays"), lab.job()
        finally:
            lab.cancel_job(wait_s=30)
        stored = lab.study(lab.job().result.study_id)
        assert stored.definition["forecast"]["instance_rps"] == 300.0, stored.definition
    finally:
        lab.stop_traffic()
