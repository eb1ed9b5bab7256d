"""Diagnosis windows read the same window figures the tiles show; the panel's sentence uses the rule's threshold."""
from __future__ import annotations

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.diagnosis.patterns import WAITING_SHARE, Symptoms, diagnose, where_time_goes
from app.diagnosis.diagnose import window_from
from app.timeline.figures import Figures
from app.timeline.sides import ServerFigures, client_rows

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
