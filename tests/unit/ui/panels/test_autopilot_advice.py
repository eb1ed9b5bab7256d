"""The autopilot's advisory mode on a page: it is on, says what it would change, and the config serving stays."""
from __future__ import annotations

from app.traffic.form import TrafficForm, build_spec
from tests.helpers import wait_until
from tests.unit.ui.apptest import labels, ok, open_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def test_advice_is_shown_as_advice_and_nothing_is_applied(on_fake):
    before = on_fake.served_text("gpu_sim")
    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", concurrency=16)), ran_s=10)
    at = open_page(PAGE)
    widget(at.checkbox, "Advisory only: say what it would change and why, apply nothing").check()
    form_button = [b for b in at.button if b.label == "Turn the autopilot on"]
    ok(form_button[0].click().run())
    wait_until(on_fake.job_running, 10, "the autopilot job to start")
    at.run()
    assert any("AUTOPILOT ADVICE" in t for t in texts(at.info)), texts(at.info) + texts(at.warning)
    assert "Stop the advice" in labels(at.button)
    on_fake.cancel_job(wait_s=10.0)
    assert on_fake.served_text("gpu_sim") == before  # advice applies nothing
    study = on_fake.studies(kind="autopilot")[0]
    assert study.definition["advisory"] is True and study.definition["twin"] is True, study.definition
