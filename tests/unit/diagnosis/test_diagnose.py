"""Diagnosis windows read the same window figures the tiles show; the panel's sentence uses the rule's threshold."""
from __future__ import annotations

import time

from app.config.edits import set_settings
from app.config.knobs import apply_knobs
from app.config.read import settings_of
from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.diagnosis.patterns import WAITING_SHARE, Symptoms, diagnose, where_time_goes
from app.diagnosis.diagnose import window_from
from app.timeline.figures import Figures
from app.timeline.sides import ServerFigures, client_rows
from app.traffic.form import TrafficForm, build_spec

SETTINGS = ModelSettings(max_batch_size=32, instance_groups=(InstanceGroup(count=2),),
                         dynamic_batching=DynamicBatching(max_queue_delay_microseconds=8000))
SERVER = {"queue_us": 6000.0, "compute_us": 2100.0, "request_us": 8100.0, "avg_batch": 6.0, "infer_rps": 500.0,
          "pending": 0.0, "pending_trend": 0.0, "per_item_us_by_batch": {}}
CLIENT = {"all": {"p50_ms": 4.0, "p99_ms": 30.0, "latency_n": 5000, "offered_rps": 500.0, "sent": 5000,
                  "requests": 5000, "rejected": 0}}


def test_window_reads_settings_and_figures_and_finds_pattern_a():
    w = window_from(Figures("gpu_sim", 0.0, 10.0, ServerFigures.from_dict(SERVER), client_rows(CLIENT)), SETTINGS)
    assert w.instances == 2 and w.max_queue_delay_us == 8000 and w.avg_batch == 6.0 and w.offered_rps == 500
    assert w.compute_us == 2100.0 and w.latency_n == 5000 and w.seconds == 10.0
    assert [f.pattern for f in diagnose(w)] == ["A"]


def test_a_p99_of_few_samples_does_not_make_pattern_a():
    client = {"all": {**CLIENT["all"], "latency_n": 40}}
    w = window_from(Figures("gpu_sim", 0.0, 10.0, ServerFigures.from_dict(SERVER), client_rows(client)), SETTINGS)
    assert not w.tail_trusted and "A" not in [f.pattern for f in diagnose(w)]


def test_the_sentence_and_pattern_a_agree_on_either_side_of_the_threshold():
    for share in (WAITING_SHARE - 0.03, WAITING_SHARE, 0.43, 0.7):
        w = Symptoms(p50_ms=4, p99_ms=30, queue_us=share * 10000, request_us=10000, compute_us=(1 - share) * 10000,
                   max_batch_size=32, dynamic_batching=True, max_queue_delay_us=20000, latency_n=5000)
        sentence = where_time_goes(w)
        says_waiting = "**waiting" in sentence
        is_a = "A" in [f.pattern for f in diagnose(w)]
        assert says_waiting == is_a, (share, sentence, is_a)


SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."


def test_the_window_reads_failures_and_texts_from_the_figures():
    client = {"all": {"ok": 0, "failed": 40, "sent": 40, "requests": 40, "errors_by_kind": {"http_400": 40},
                      "error_texts": {"http_400": {"count": 40, "first": "old words", "first_t": 1.0,
                                                   "latest": SHAPE, "latest_t": 9.0}}}}
    server = {"infer_rps": 0.0, "fail_count": 0.0, "intervals": 9}
    w = window_from(Figures("m", 0.0, 10.0, ServerFigures.from_dict(server), client_rows(client)),
                    ModelSettings(max_batch_size=32))
    assert (w.failed, w.ended, w.failed_share, w.error_text, w.server_failed) == (40, 40, 1.0, SHAPE, 0.0)
    assert [f.pattern for f in diagnose(w)] == ["failing"]
    unscraped = window_from(Figures("m", 0.0, 10.0, ServerFigures(), client_rows(client)),
                            ModelSettings(max_batch_size=32))
    assert unscraped.server_failed is None  # no scrape in the window: no claim on what the server counted


def test_pattern_a_window_from_settings_still_stands_without_failures():
    settings = ModelSettings(max_batch_size=32, dynamic_batching=DynamicBatching(max_queue_delay_microseconds=8000))
    client = {"all": {"p50_ms": 4.0, "p99_ms": 30.0, "latency_n": 5000, "ok": 5000, "failed": 0, "sent": 5000,
                      "requests": 5000}}
    server = {"queue_us": 6000.0, "compute_us": 2100.0, "request_us": 8100.0, "avg_batch": 6.0, "infer_rps": 500.0}
    w = window_from(Figures("m", 0.0, 10.0, ServerFigures.from_dict(server), client_rows(client)), settings)
    assert w.failed_share == 0.0 and [f.pattern for f in diagnose(w)] == ["A"]


def test_a_lab_window_from_the_tiles_figures_is_diagnosed(fake):
    """The tiles' path on a lab: the served settings, the window's figures (Lab.measure), window_from, diagnose —
    no delay under a light load on the simulated server batches nothing. (That the real server shows it: the
    diagnosis section of bench/study_claims.py.)"""
    current = fake.served_config("gpu_sim")
    settings = apply_knobs(settings_of(current), {"max_queue_delay_microseconds": 0})
    fake.apply("gpu_sim", set_settings(current, settings), "no delay")
    fake.start_traffic(build_spec(TrafficForm(model="gpu_sim", mode="open", rate=20, arrival="poisson")), ran_s=12)
    now = time.time()
    window = window_from(fake.measure("gpu_sim", now - 8, now, include_held=False), settings)
    assert window.max_queue_delay_us == 0 and window.latency_n > 0 and window.avg_batch == 1.0, window
    assert [f.pattern for f in diagnose(window)] == ["stuck"], where_time_goes(window)
