"""The change-marker log: stable ids, reload bands, which requests a band held, and before/after windows."""
from __future__ import annotations

from app.timeline.figures import Figures, impact
from app.timeline.markers import ALL_MODELS, MarkerLog
from tests.helpers import Clock


def test_markers_are_bounded_filtered_by_model_and_keep_their_ids():
    clock = Clock()
    log = MarkerLog(limit=3, clock=clock)
    for i in range(5):
        clock.now = float(i)
        log.add("gpu_sim" if i % 2 else "mlp", "apply", f"change {i}")
    assert [(m.id, m.text) for m in log.list()] == [(3, "change 2"), (4, "change 3"), (5, "change 4")]
    assert [m.text for m in log.list("gpu_sim")] == ["change 3"]
    restart = log.add(ALL_MODELS, "restart", "server restart")
    assert restart in log.list("gpu_sim") and restart in log.list("mlp")


def test_a_band_holds_requests_in_flight_while_it_is_open_and_after_it_closes():
    clock = Clock(100.0)
    log = MarkerLog(clock=clock)
    band = log.begin("gpu_sim", "apply", "delay 0 -> 2000")
    assert band.end is None and log.held("gpu_sim", 99.0, 100.5)  # sent before, answered during: held
    assert not log.held("mlp", 99.0, 100.5)  # another model's reload holds nothing
    clock.now = 102.0
    done = log.finish(band, detail="diff")
    assert done.id == band.id and done.end == 102.0 and done.settled == 102.0 and log.list()[0].end == 102.0
    assert log.held("gpu_sim", 101.0, 103.0) and log.held("gpu_sim", 99.0, 102.5)
    assert not log.held("gpu_sim", 98.0, 99.9) and not log.held("gpu_sim", 102.1, 102.5)


def test_a_failed_change_keeps_its_band_marked_not_ok():
    clock = Clock(10.0)
    log = MarkerLog(clock=clock)
    band = log.begin("gpu_sim", "apply", "instances 9")
    clock.now = 11.0
    failed = log.finish(band, detail="rejected", ok=False, text="instances 9 — not applied")
    assert not failed.ok and failed.text.endswith("not applied") and log.last_change("gpu_sim") == failed


def test_impact_measures_before_the_request_and_after_serving_resumed():
    clock = Clock(100.0)
    log = MarkerLog(clock=clock)
    band = log.begin("gpu_sim", "apply", "x")
    clock.now = 103.0
    band = log.finish(band)
    asked = []

    def measure(t0, t1):
        asked.append((t0, t1))
        return Figures("gpu_sim", t0, t1)

    result = impact(band, measure, span_s=10.0, settle_s=1.0, now=200.0)
    assert asked == [(90.0, 100.0), (104.0, 114.0)]  # the 3 s reload band is in neither window
    assert result["after"].t0 == 104.0
    assert impact(band, measure, now=105.0)["after"] is None  # after-window shorter than 2 s: not yet
