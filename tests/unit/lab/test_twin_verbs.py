"""The lab's twin on a FakeLab: it learns from the traffic the server already serves, and predicts before a change."""
from __future__ import annotations

from dataclasses import replace

import pytest

from app.config.read import settings_of
from app.metrics.statistics_api import ModelStats
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
    # the clients' p99 and the server's mean time beside it (the spread of the clients' own time), of an open loop
    assert window.open_loop is True and window.client_p99_us > 0 and window.server_us > 0, window
    assert window.outside_p99_us >= window.outside_us, window
    assert window.host_cpu == pytest.approx(0.5), window  # the host's CPUs over the window (the fake reports 0.5)
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


def _stats(executions: int, ms: float = 14.0) -> ModelStats:
    """Counters after this many executions of 8 at ms each (input and output 0.5 ms a request)."""
    n = 8 * executions
    return ModelStats(batches={8: executions}, batch_ns={8: round(executions * ms * 1e6)}, inference_count=n,
                      execution_count=executions, counts={k: n for k in ("success", "compute_input", "compute_output")},
                      ns={"success": n * 20_000_000, "queue": n * 3_000_000, "compute_input": n * 250_000,
                          "compute_output": n * 250_000, "compute_infer": round(executions * ms * 1e6)})


def test_learn_edges_takes_exactly_the_executions_between_two_reads(fake):
    """The probe's windows: the counter differences between two edges and the edges' own times, not the poller's
    whole seconds; an edge without statistics or too few executions between them teaches nothing."""
    import time  # noqa: PLC0415

    from app.timeline.meter import Edge  # noqa: PLC0415

    fake.start_traffic(LoadSpec(mode=Mode.CLOSED, concurrency=8, model="gpu_sim", duration_s=None), ran_s=15)
    now = time.time()
    figures = fake.measure("gpu_sim", now - 10, now - 1)
    before, after = Edge(100.0, None, _stats(40)), Edge(101.25, None, _stats(100, ms=15.0), cpu_util=0.93)
    assert fake.learn_edges("gpu_sim", before, after, figures, p99_parts_ms=(4.0, 13.0, 52.0))
    window = fake.calibration("gpu_sim").windows[-1]
    assert window.seconds == 1.25 and window.batches[0][:2] == (8, 60), window
    assert window.host_cpu == 0.93, window  # the host's CPUs as the window's last edge read them
    assert window.p99_parts_us == (4000.0, 13000.0, 52000.0), window  # the level's windows' p99s, in µs
    assert window.open_loop is False, window  # the lab's traffic to the model is a closed loop
    # 100 executions at 15 ms after 40 at 14: the 60 between took (1,500 - 560) ms, 15.67 ms each
    assert abs(window.batches[0][2] / 60 / 1e6 - (1500 - 560) / 60) < 1e-6, window.batches
    assert not fake.learn_edges("gpu_sim", Edge(100.0, None, None), after, figures)
    assert not fake.learn_edges("gpu_sim", Edge(100.0, None, _stats(95)), after, figures)  # 5 executions
    # a reload between the reads zeroes the counters: the window is everything since (the 100 of after)
    assert fake.learn_edges("gpu_sim", Edge(100.0, None, _stats(300)), after, figures)
    assert fake.calibration("gpu_sim").windows[-1].batches[0][:2] == (8, 100), fake.calibration("gpu_sim").windows


def test_an_ensemble_gets_the_reason_not_a_prediction_and_its_steps_still_get_one(tmp_path):
    """An ensemble has no queue, batcher or instances of its own: its requests queue at each step. The twin, which
    models one model's, says so where it would have predicted the ensemble as one model with the steps in series."""
    from tests.fakes.fake_lab import FakeLab  # noqa: PLC0415
    from tests.third_party import SOURCE  # noqa: PLC0415

    for model in ("pipeline", "pipe_scale"):  # each on a lab of its own: a new one has a history to fill at once
        lab = FakeLab(tmp_path / model, repo=SOURCE)
        try:
            lab.start_traffic(LoadSpec(mode=Mode.OPEN, rate=100.0, model=model, duration_s=None), ran_s=15)
            assert lab.calibration(model) is not None  # it saw the executions: not why the ensemble is refused
            settings = settings_of(lab.served_config(model))
            if model == "pipeline":
                with pytest.raises(ValueError, match="pipeline is an ensemble: each request runs pipe_scale → "
                                                     "pipe_offset, and each step queues, batches and runs on its own"):
                    lab.predict(model, settings)
            else:
                step = lab.predict(model, settings)
                assert step.throughput_rps.low <= 105 and step.throughput_rps.high >= 90, step.throughput_rps
        finally:
            lab.close()


def test_a_window_across_a_change_of_traffic_is_not_learnt_from(fake, monkeypatch):
    """The twin learns a window of one load only: once the rate changes, the seconds before the change are another
    load's, and a window holding both would note their mix (the clients' rate an average, the tail the worst one's).
    Right after the change there is nothing of the new load to learn from yet, though the twin is due another."""
    fake.start_traffic(LoadSpec(mode=Mode.OPEN, rate=150.0, model="gpu_sim", duration_s=None), ran_s=15)
    first = fake.calibration("gpu_sim")
    assert first is not None and len(first.windows) == 1, first
    assert first.windows[0].client_rps == pytest.approx(150.0, rel=0.15), first.windows[0]
    fake.update_traffic(rate=400.0)
    monkeypatch.setattr(fake._twin, "due", lambda model, now: True)  # as if ten seconds had passed
    after = fake.calibration("gpu_sim")
    assert len(after.windows) == 1, [w.client_rps for w in after.windows]
