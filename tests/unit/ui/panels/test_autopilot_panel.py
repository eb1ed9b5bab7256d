"""The autopilot panel of the Instances page (app/ui/panels/autopilot_panel.py) on the FakeLab: off by default, turned
on from its form (bad bounds refused in words), a clearly marked mode while on, off again with its study kept — and,
under a rate trace, sizing ahead of it."""
from __future__ import annotations

from app.autopilot.job import KIND
from loadgen.rate_trace.trace_load import trace_load
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.unit.ui.apptest import button, ok, open_page, soon, texts, widget

PAGE = "lab_pages/instances.py"
TURN_ON = "FormSubmitter:autopilot:instances:gpu_sim-Turn the autopilot on"


def test_off_by_default_refuses_bad_bounds_then_on_and_off_with_its_study_kept(on_fake):
    at = open_page(PAGE)
    assert not on_fake.job_running()
    assert any("turn on the autopilot" in e.label for e in at.expander), [e.label for e in at.expander]
    assert not any("AUTOPILOT ON" in w for w in texts(at.warning))

    widget(at.number_input, "Fewest instances").set_value(3)
    widget(at.number_input, "Most instances").set_value(2)
    at.button(key=TURN_ON).click().run()
    said = texts(at.error)
    assert said and "min_instances is 3, above max_instances 2; use min ≤ max" in said[0], said
    assert not on_fake.job_running()

    widget(at.number_input, "Fewest instances").set_value(1)
    widget(at.number_input, "Most instances").set_value(3)
    widget(at.number_input, "p99 SLA (ms)").set_value(80.0)
    ok(at.button(key=TURN_ON).click().run())
    assert on_fake.job_running() and on_fake.job().kind == KIND, on_fake.job()
    soon(lambda: on_fake.job().progress is not None and on_fake.job().progress.windows >= 1, what="a first window")
    ok(at.run())
    banner = " ".join(texts(at.warning))
    assert "AUTOPILOT ON" in banner and "p99 ≤ 80 ms with 1–3 instances" in banner, banner
    assert "waiting for enough answers" in on_fake.job().progress.current  # no traffic: it judges nothing
    ok(button(at, "Turn the autopilot off").click().run())
    assert not on_fake.job_running()
    ok(at.run())
    study = on_fake.job().result.study_id
    said = " ".join(texts(at.info))
    assert "The autopilot is off after" in said and f"study {study}" in said, said
    stored = on_fake.study(study)
    assert stored.kind == KIND and stored.note == "turned off" and stored.result["changes"] == [], stored

    runs = open_page("lab_pages/experiments.py")  # the run is kept, and its windows replay to the same decisions
    assert any(f"Autopilot run {study} on" in s and "turned off" in s for s in texts(runs.success)), texts(runs.success)
    ok(button(runs, "Replay its windows through the rules").click().run())
    n = len(stored.result["records"])
    assert f"Replayed {n} of {n} recorded windows: {n} decisions the same, word for word." in texts(runs.success)


def test_under_a_trace_it_can_size_ahead_of_it_and_says_so(on_fake):
    at = open_page(PAGE)
    assert widget(at.checkbox, "Add instances ahead of the trace the traffic plays").disabled, "no trace plays"
    base = LoadSpec(mode=Mode.OPEN, model="gpu_sim", rate=10.0, duration_s=60.0, classes=(TrafficClass(),))
    on_fake.start_traffic(trace_load(base, "flash_crowd", 30.0, 0.2))
    ok(at.run())
    box = widget(at.checkbox, "Add instances ahead of the trace the traffic plays")
    assert not box.disabled
    box.check()
    widget(at.number_input, "Requests/s one instance carries within the SLA (0: learn it live)").set_value(300.0)
    ok(at.button(key=TURN_ON).click().run())
    soon(lambda: on_fake.job().progress is not None, what="the autopilot's study")
    ok(at.run())
    banner = " ".join(texts(at.warning))
    assert "adding instances ahead of the trace the traffic plays (flash_crowd)" in banner, banner
    assert on_fake.job().progress.forecast.startswith("the trace the traffic plays"), on_fake.job()
    on_fake.cancel_job(wait_s=10)
    stored = on_fake.study(on_fake.job().result.study_id)
    assert stored.definition["forecast"]["instance_rps"] == 300.0, stored.definition


def _twelve_decisions():
    from app.autopilot.pilot import Decision
    from app.ui.panels.autopilot_panel import _changes

    reason = ("p99 70.4 ms over the 40 ms SLA, queue wait 44 % of server time: +1 instance (1 → 2): the twin expects "
              "p99 up to 29.1 ms with 2 instances for the lab's closed loop of 16 in flight (now 508/s)")
    _changes([Decision(1_780_000_000.0 + 10 * i, "add", f"#{i} {reason}", {"instance_count": 2}) for i in range(12)])


def test_the_newest_decisions_show_newest_first_with_every_reason_whole():
    from tests.unit.ui.apptest import run_function

    at = run_function(_twelve_decisions)
    (table,) = [t.value for t in at.table]
    assert len(table) == 10 and table["why"].iloc[0].startswith("#11 ") and table["why"].iloc[-1].startswith("#2 ")
    assert table["why"].iloc[0].endswith("(now 508/s)"), table["why"].iloc[0]  # whole, in a table whose cells wrap
    assert any("newest 10 of 12 decisions" in c.value for c in at.caption), [c.value for c in at.caption]
