"""The lab's twin on a FakeLab: it learns from the traffic the server already serves, and predicts before a change."""
from __future__ import annotations

from dataclasses import replace

import pytest

from app.config.read import settings_of
from loadgen.spec import LoadSpec, Mode


def test_no_execution_seen_means_no_calibration_and_a_prediction_says_what_to_do(fake):
    settings = settings_of(fake.served_config("gpu_sim"))
    assert fake.calibration("gpu_sim") is None
    with pytest.raises(ValueError, match="seen no execution of gpu_sim yet"):
        fake.predict("gpu_sim", settings)


def test_traffic_already_running_calibrates_it_and_a_prediction_follows_the_knobs(fake):
    fake.start_traffic(LoadSpec(mode=Mode.OPEN, rate=150.0, model="gpu_sim", duration_s=None), ran_s=15)
    calibration = fake.calibration("gpu_sim")
    assert calibration is not None and calibration.instance_counts == (1,), calibration
    window = calibration.windows[-1]  # what the clients saw beside it: the host ceiling's evidence
    assert window.client_rps and window.outside_us is not None and window.queue_us is not None, window
    settings = settings_of(fake.served_config("gpu_sim"))
    now = fake.predict("gpu_sim", settings)
    assert now.throughput_rps.low <= 150.0 * 1.05 and now.throughput_rps.high >= 150.0 * 0.9, now.throughput_rps
    assert fake.predict("gpu_sim", settings) is now  # asked again within a window: the cached answer
    more = replace(settings, instance_groups=(replace(settings.instance_groups[0], count=2),))
    assert fake.predict("gpu_sim", more) is not now


def test_learn_takes_a_window_a_probe_chose_and_refuses_one_without_executions(fake):
    import time  # noqa: PLC0415

    now = time.time()
    assert not fake.learn("gpu_sim", now - 20, now)  # idle: nothing to learn
    fake.start_traffic(LoadSpec(mode=Mode.CLOSED, concurrency=4, model="gpu_sim", duration_s=None), ran_s=15)
    assert fake.learn("gpu_sim", time.time() - 15, time.time())
