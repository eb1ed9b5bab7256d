"""A field-guide symptom reproduced on the real server with the traffic form and named by the diagnosis, from the
tiles' window figures. Patterns A, B and C (and their fixes) are the `patterns` scenario (tests/scenarios)."""
from __future__ import annotations

import time

import pytest

from app.config.edits import set_settings
from app.config.read import settings_of
from app.diagnosis.patterns import diagnose, where_time_goes
from app.diagnosis.diagnose import window_from
from app.config.knobs import apply_knobs
from app.lab.root import Lab
from app.traffic.form import TrafficForm, build_spec
from tests.helpers import wait_until

SPAN_S = 8
WARMUP_S = 2


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def _diagnose(lab: Lab, knobs: dict, form: TrafficForm) -> list:
    current = lab.served_config("gpu_sim")
    settings = apply_knobs(settings_of(current), knobs)
    lab.apply("gpu_sim", set_settings(current, settings), "scenario")
    lab.start_traffic(build_spec(form))
    started = time.time()
    try:
        # the window: SPAN_S whole seconds of traffic on the new config, after a warm-up
        wait_until(lambda: time.time() >= started + WARMUP_S + SPAN_S + 1, 60, "a full window of traffic")
        now = time.time()
        figures = lab.measure("gpu_sim", now - SPAN_S, now, include_held=False)
    finally:
        lab.stop_traffic()
    window = window_from(figures, settings)
    findings = diagnose(window)
    print(f"{knobs} {form.rate}/s {form.arrival}: p50 {window.p50_ms} p99 {window.p99_ms} n={window.latency_n} "
          f"queue {window.queue_us} compute {window.compute_us} batch {window.avg_batch} "
          f"served {window.infer_rps} offered {window.offered_rps} pending {window.pending} "
          f"-> {[f.pattern for f in findings]} ({where_time_goes(window)})")
    return findings


def test_no_delay_under_light_load_is_batch_stuck_at_one(lab):
    findings = _diagnose(lab, {"max_queue_delay_microseconds": 0},
                         TrafficForm(model="gpu_sim", mode="open", rate=20, arrival="poisson"))
    assert [f.pattern for f in findings] == ["stuck"]
