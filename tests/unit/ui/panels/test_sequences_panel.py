"""The Sequence batching page's correctness panel (app/ui/panels/sequences_panel.py): under sequence traffic, the right
answers and the wrong ones counted, and whether the scheduler fits a stateful model."""
from __future__ import annotations

from app.traffic.form import TrafficForm, build_spec
from tests.unit.ui.apptest import metric, open_page, texts


def test_sequence_traffic_counts_its_right_answers_and_the_scheduler_fits(on_fake):
    on_fake.start_traffic(build_spec(TrafficForm(model="stream_acc", sequences=4, sequence_length=20)), ran_s=12)
    at = open_page("lab_pages/sequence_batching.py")
    assert any("stream_acc is stateful" in s and "scheduler: sequence — right" in s for s in texts(at.success))
    assert int(metric(at, "right answers (last 30 s)").replace(",", "")) >= 20
    assert int(metric(at, "wrong outputs (last 30 s)")) == 0
