"""The autopilot on the real server: turned on under a load one instance cannot serve, it acts through the lab's
safe-apply path, every change a marker with its reason, inside its bounds; the study it leaves replays to the same
decisions. (Its rules: tests/unit/autopilot/test_pilot.py; its own stop on someone else's change, on a FakeLab:
tests/unit/autopilot/test_job.py; whether it beats a static config: bench/autopilot_vs_static.py.)"""
from __future__ import annotations

import pytest

from app.autopilot.pilot import Bounds
from app.autopilot.job import AutopilotJob, bounds_from, replay
from app.config.edits import set_settings
from app.config.read import settings_of
from app.config.knobs import apply_knobs
from app.traffic.form import TrafficForm, build_spec
from tests.helpers import wait_until

MODEL = "gpu_sim"


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def _serve(lab, knobs: dict) -> None:
    current = lab.served_config(MODEL)
    settings = apply_knobs(settings_of(current), knobs)
    lab.apply(MODEL, set_settings(current, settings), "test: start")


def _last(lab) -> str:
    """Return the autopilot's latest decision in words (what a failed wait prints)."""
    progress = lab.job().progress if lab.job() else None
    last = getattr(progress, "last", None)
    return f"{last.kind}: {last.reason} {last.figures}" if last else "no decision yet"


def _instances(lab) -> int:
    return settings_of(lab.served_config(MODEL)).instance_groups[0].count


def test_it_acts_on_overload_within_bounds_and_replays(lab):
    # gpu_sim without dynamic batching runs one request per execution (~6 ms with its launch and copy): one instance
    # serves ~140/s here, so 200/s queue without bound — p99 over 60 ms within seconds. Not far more: Triton swaps
    # instances only once the queue before the reload has drained (measured: 3.3 s at 220/s, over 45 s at 500/s).
    _serve(lab, {"instance_count": 1, "dynamic_batching": False})
    bounds = Bounds(sla_p99_ms=60.0, min_instances=1, max_instances=3, delays_us=(), dwell_s=3.0)
    job = AutopilotJob(lab, MODEL, bounds, window_s=3.0, period_s=1.0)
    lab.start_traffic(build_spec(TrafficForm(model=MODEL, mode="open", rate=200, arrival="poisson",
                                             duration_s=120)))
    try:
        lab.start_job(job)
        wait_until(lambda: _instances(lab) > 1 or print(_last(lab)), 60, "the autopilot to add an instance")
        seen = []
        wait_until(lambda: seen.append(_instances(lab)) or len(seen) >= 3, 30, "a few more looks")
    finally:
        lab.cancel_job(wait_s=30)
        lab.stop_traffic()
    state = lab.job()
    assert state.error is None, state.error
    result = state.result
    changes = [d for d in result.changes if d.changes]
    print([(d.kind, d.reason) for d in result.changes])
    assert changes and changes[0].kind == "add", result.changes
    assert all(1 <= d.knobs.get("instance_count", 1) <= 3 for d in changes), changes
    assert max(seen) <= 3, seen
    marked = [m.text for m in lab.markers(MODEL) if m.text.startswith("autopilot: ")]
    assert marked[:len(changes)] == [d.marker_text for d in changes], (marked, changes)
    assert "+" in changes[0].reason and "p99" in changes[0].reason, changes[0].reason

    study = lab.study(result.study_id)
    records = study.result["records"]
    assert study.kind == "autopilot" and study.status == "done" and study.note == "turned off", study
    assert len(records) == result.windows and records, len(records)
    again = replay(records, bounds_from(study.definition["bounds"]), settings_of(lab.served_config(MODEL)))
    assert [(d.kind, d.reason, d.knobs) for d in again] == \
        [(r["decision"]["kind"], r["decision"]["reason"], r["decision"]["knobs"]) for r in records]
