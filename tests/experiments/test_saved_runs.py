"""A saved run: only the time since the last config change, up to the run's end, with every second kept."""
from __future__ import annotations

import time

import pytest

from app.experiments.capture import save_run
from app.metrics.meter import MeasuredWindow
from app.experiments.sweep.space import Choice
from loadgen.spec import LoadSpec
from tests.helpers import wait_until

MODEL = "gpu_sim"


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def test_a_saved_run_covers_the_time_since_the_change_and_keeps_each_second(lab):
    lab.start_traffic(LoadSpec(model=MODEL, concurrency=4, duration_s=60.0, seed=5))
    try:
        wait_until(lambda: lab.measure(MODEL, time.time() - 2, time.time()).samples() > 50, 30, "2 s of answers")
        lab.apply(MODEL, Choice(delay_us=1000).config(lab.served_config(MODEL)), "delay 1000")
        band = lab.last_change(MODEL)
        # 12 s: Triton publishes its counters once a second, so a run's last second or so of server counts is not
        # in its polls yet; with 5 s only 3 whole seconds were saved and that lag was 30 % of them (beside
        # stress-ng --cpu 1, 2026-12-04: 383 server successes against 548 client answers)
        wait_until(lambda: time.time() > band.settled + 12.0, 30, "12 s after the change")
    finally:
        lab.stop_traffic()
    ended = time.time()
    time.sleep(0.5)
    saved = save_run(lab, "after the change", now=ended + 20)  # saved 20 s later: the idle time is not counted
    print("window", saved.started_at - band.settled, saved.ended_at - ended, "windows", len(saved.windows))
    assert saved.started_at >= band.settled + 1.0, "the run included time before the config change"
    assert saved.ended_at <= ended + 0.5, "the idle time after the run was counted"
    assert saved.seed == 5 and saved.spec["seed"] == 5 and "max_queue_delay_microseconds: 1000" in saved.config_text
    seconds = [MeasuredWindow.from_dict(w) for w in saved.windows]
    assert 3 <= len(seconds) <= saved.ended_at - saved.started_at + 1
    assert all(abs(w.seconds - 1.0) < 1e-6 for w in seconds)
    per_second_ok = sum(w.figures().row().ok for w in seconds if w.buckets)
    assert per_second_ok == saved.client["all"]["ok"], (per_second_ok, saved.client["all"]["ok"])
    assert sum(w.delta.counters.get("nv_inference_request_success", 0) for w in seconds) > 0.8 * per_second_ok
    assert saved.reloads == [] or all(r[1] <= saved.started_at for r in saved.reloads)
