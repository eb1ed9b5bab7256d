"""The diagnosis panel of the Latency breakdown page (app/ui/panels/diagnosis_panel.py) on the FakeLab: it reads the
window under traffic, names the field guide's pattern it shows, and applies a finding's suggestion."""
from __future__ import annotations

import re

from app.config.model_config import format_config, read_config
from app.config.read import settings_of
from app.traffic.form import TrafficForm, build_spec
from tests.fakes.fake_lab import FakeLab
from tests.helpers import copy_of_the_lab_repository
from tests.unit.ui.apptest import button, labels, ok, open_page, texts


def test_with_no_traffic_it_says_there_is_nothing_to_diagnose(on_fake):
    at = open_page("lab_pages/diagnosis.py")
    assert any(h.value.startswith("Diagnosis — last") for h in at.subheader)
    assert "No traffic in the window: start traffic to diagnose." in texts(at.info)


def test_it_reads_the_window_under_traffic(on_fake):
    on_fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=150, arrival="bursty")), ran_s=22)
    at = open_page("lab_pages/diagnosis.py")
    lines = [m for m in texts(at.markdown) if m.startswith("client p50 **")]
    assert lines and "queue/batching wait" in lines[0] and re.search(r"\(last \d+ s, n=[\d,]+", lines[0]), lines


def test_a_findings_suggestion_applies_with_one_click(install, tmp_path):
    repo = copy_of_the_lab_repository(tmp_path)  # gpu_sim without dynamic batching: every batch is 1
    config = read_config(repo / "gpu_sim" / "config.pbtxt")
    config.ClearField("dynamic_batching")
    (repo / "gpu_sim" / "config.pbtxt").write_text(format_config(config))
    lab = install(FakeLab(tmp_path / "no-dynamic-batching", repo=repo))
    lab.start_traffic(build_spec(TrafficForm(model="gpu_sim", concurrency=16)), ran_s=22)
    at = open_page("lab_pages/diagnosis.py")
    assert any(m.startswith("**Batch size stuck at 1**") for m in texts(at.markdown)), texts(at.markdown)
    suggestion = next(b for b in labels(at.button) if b.startswith("Apply the suggestion: dynamic batching → True"))
    ok(button(at, suggestion).click().run())
    assert settings_of(lab.served_config("gpu_sim")).dynamic_batching is not None
    assert any(s.startswith("Applied: ") for s in texts(at.success)), texts(at.success)
    assert "dynamic_batching" in (lab.repo_copy / "gpu_sim" / "config.pbtxt").read_text()
