"""Window figures on the real server: counter differences like perf_analyzer's start/end reads, true window p99s."""
from __future__ import annotations

import time

import numpy as np
import pytest

from app.config.edits import set_settings
from app.config.read import settings_of
from app.config.knobs import apply_knobs
from app.metrics.poller import MetricsPoller
from app.metrics.scrape import fetch_text, parse_metrics
from loadgen.controller import LoadController
from loadgen.spec import LoadSpec
from tests.helpers import read_config, reload, wait_until

MODEL = "gpu_sim"


def _counters(triton) -> tuple[float, dict, dict]:
    scrape = parse_metrics(fetch_text(triton.endpoint.metrics_url), time.time())
    values = scrape.models[MODEL]
    return scrape.t, dict(values.counters), dict(values.failures)


def test_server_window_equals_the_difference_of_start_and_end_scrapes(triton, restore_model):
    restore_model(MODEL)
    poller = MetricsPoller(triton.endpoint, models=(MODEL,))
    poller.poll_once()
    t_start = time.time()
    _, start, _ = _counters(triton)  # perf_analyzer's way: read the counters when the window opens...
    load = LoadController(triton.url)
    load.start(LoadSpec(model=MODEL, concurrency=6, duration_s=4.0))
    halfway = read_config(triton.repo, MODEL)
    halfway.dynamic_batching.max_queue_delay_microseconds = 4000
    time.sleep(1.0)
    for _ in range(3):  # polls while traffic runs, then a config reload inside the window (counters keep counting)
        poller.poll_once()
        time.sleep(0.5)
    reload(triton.endpoint, MODEL, halfway)
    assert load.wait(30.0)
    load.close()
    triton.wait_idle()  # the last answers are counted before the window closes
    poller.poll_once()
    t_end, end, _ = _counters(triton)  # ...and when it closes
    poller.poll_once()

    got = poller.window(MODEL, t_start - 0.001, time.time())
    d = {k: end[k] - start[k] for k in end}
    success, infer, execs = (d["nv_inference_request_success"], d["nv_inference_count"], d["nv_inference_exec_count"])
    print(f"start/end difference: {success:.0f} requests, {execs:.0f} executions; window: {got['request_count']:.0f}, "
          f"{got['exec_count']:.0f} over {got['intervals']} intervals")
    assert success > 0 and got["resets"] == 0
    assert (got["request_count"], got["infer_count"], got["exec_count"]) == (success, infer, execs)
    assert got["avg_batch"] == pytest.approx(infer / execs)
    for key, counter in (("queue_us", "queue"), ("compute_infer_us", "compute_infer"), ("request_us", "request")):
        assert got[key] == pytest.approx(d[f"nv_inference_{counter}_duration_us"] / success), key
    covered = got["span"][1] - got["span"][0]
    assert got["infer_rps"] == pytest.approx(infer / covered)
    # (the statistics API's batch histogram restarts at a config reload, so it is not compared across one here)


def _client_window(triton, duration_s: float) -> tuple[float, dict, list[float]]:
    """Drive MODEL for duration_s; return the run's start, the controller's window from 1 s after it to 1 s before
    its end, and the latencies (ms) of the answered requests that ended inside that window, from the records."""
    records = []
    load = LoadController(triton.url)
    load.subscribe(records.extend)
    load.start(LoadSpec(model=MODEL, concurrency=4, duration_s=duration_s, seed=1))
    assert load.wait(30.0 + duration_s)
    load.close()
    t0, end = load.snapshot().started_at, duration_s - 1.0
    window = load.window(t0 + 1.0, t0 + end)["all"]
    inside = [r.latency_s * 1000 for r in records if 1.0 <= r.sent_s + r.latency_s < end and r.outcome.value == "ok"]
    print(f"{duration_s:.0f} s run: window n={window['latency_n']}, p99 {window['p99_ms']:.2f} ms; records: "
          f"n={len(inside)}, p99 {np.percentile(inside, 99):.2f} ms")
    return t0, window, inside


def test_client_window_p99_is_the_p99_of_every_request_in_it(triton, restore_model):
    restore_model(MODEL)
    duration_s = 4.0
    t0, window, inside = _client_window(triton, duration_s)
    assert window["latency_n"] == len(inside) > 0
    assert window["p99_ms"] == pytest.approx(np.percentile(inside, 99))
    assert window["span"] == (t0 + 1.0, t0 + duration_s - 1.0)


@pytest.fixture
def lab(gpu_sim_lab):
    return gpu_sim_lab


def test_an_apply_under_load_is_a_band_whose_requests_stay_out_of_before_and_after(lab):
    lab.start_traffic(LoadSpec(model=MODEL, concurrency=4, duration_s=60.0))
    try:
        wait_until(lambda: lab.measure(MODEL, time.time() - 3, time.time()).samples() > 20, 30,
                   "answers in the last 3 s")
        current = lab.served_config(MODEL)
        lab.apply(MODEL, set_settings(current, apply_knobs(settings_of(current), {"max_queue_delay_microseconds": 2000})),
                  "delay 2000")
        band = next(m for m in lab.markers(MODEL) if m.kind == "apply")
        wait_until(lambda: lab.impact(band, MODEL, span_s=3.0)["after"] is not None
                   and lab.impact(band, MODEL, span_s=3.0)["after"].seconds >= 3.0, 30, "3 s after the reload")
    finally:
        lab.stop_traffic()
    kinds = [m.kind for m in lab.markers(MODEL)]
    assert kinds == ["traffic", "apply", "traffic"], kinds
    assert band.end is not None and band.end > band.t
    result = lab.impact(band, MODEL, span_s=3.0)
    before, after = result["before"], result["after"]
    assert before.t1 <= band.t and after.t0 >= band.end
    whole = lab.measure(MODEL, band.t - 3.0, after.t1, include_held=True).row()
    print(f"reload {band.end - band.t:.2f} s; held {whole.held} requests; before n={before.samples()}, "
          f"after n={after.samples()}")
    assert whole.held > 0  # requests were in flight during the reload: counted...
    assert before.row().held == after.row().held == 0  # ...and in neither comparison window
    assert before.get("avg_batch") is not None and after.get("avg_batch") is not None
