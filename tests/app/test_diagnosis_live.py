"""Field-guide patterns reproduced on the real server and named by the diagnosis."""
from __future__ import annotations

import time

import pytest

from app.config.edits import set_settings
from app.config.read import settings_of
from app.diagnosis import diagnose
from app.diagnosis_window import window_from
from app.knobs import apply_knobs
from app.lab import Lab
from app.traffic import TrafficForm, build_spec

SPAN_S = 8


@pytest.fixture
def lab(triton, restore_model, tmp_path, monkeypatch):
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path))
    restore_model("gpu_sim")
    lab = Lab.create({"TRITON_URL": triton.url, "TRITON_METRICS_URL": triton.endpoint.metrics_url,
                      "TRITON_MODEL_REPOSITORY": str(triton.repo)})
    yield lab
    lab.close()


def _diagnose(lab: Lab, knobs: dict, form: TrafficForm) -> list:
    current = lab.config.current("gpu_sim")
    settings = apply_knobs(settings_of(current), knobs)
    lab.apply("gpu_sim", set_settings(current, settings), "scenario")
    lab.load.start(build_spec(form))
    try:
        time.sleep(SPAN_S + 4)  # warm up, then a full window of traffic on the new config
        since = time.time() - SPAN_S
        metrics = lab.metrics.snapshot(model="gpu_sim", window_s=SPAN_S)
        load = [r for r in lab.load.snapshot(window_s=SPAN_S).timeline if r["t"] >= since]
    finally:
        lab.load.stop()
    window = window_from(metrics.timeline, load, metrics.per_item_us_by_batch, settings)
    return diagnose(window)


def test_long_delay_under_light_bursty_load_is_pattern_a(lab):
    findings = _diagnose(lab, {"max_queue_delay_microseconds": 20000, "preferred_batch_size": (4, 8)},
                         TrafficForm(model="gpu_sim", mode="open", rate=150, arrival="bursty"))
    assert [f.pattern for f in findings] == ["A"]
    assert findings[0].knobs == {"max_queue_delay_microseconds": 5000}


def test_no_delay_under_light_load_is_batch_stuck_at_one(lab):
    findings = _diagnose(lab, {"max_queue_delay_microseconds": 0},
                         TrafficForm(model="gpu_sim", mode="open", rate=100, arrival="poisson"))
    assert [f.pattern for f in findings] == ["stuck"]


def test_overload_without_batching_is_pattern_b(lab):
    findings = _diagnose(lab, {"dynamic_batching": False},
                         TrafficForm(model="gpu_sim", mode="open", rate=600, arrival="poisson", timeout_ms=20000))
    assert "B" in [f.pattern for f in findings]
    assert next(f for f in findings if f.pattern == "B").knobs["dynamic_batching"] is True
