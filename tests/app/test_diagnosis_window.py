"""Diagnosis windows are built from real-shaped snapshot rows."""
from __future__ import annotations

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings
from app.diagnosis import diagnose
from app.diagnosis_window import slope, window_from

SETTINGS = ModelSettings(max_batch_size=32, instance_groups=(InstanceGroup(count=2),),
                         dynamic_batching=DynamicBatching(max_queue_delay_microseconds=8000))


def _metrics(t, queue_us=6000.0, pending=0.0):
    return {"t": t, "queue_us": queue_us, "compute_input_us": 50.0, "compute_infer_us": 2000.0, "compute_output_us": 50.0,
            "request_us": queue_us + 2100.0, "avg_batch": 6.0, "infer_rps": 500.0, "pending": pending}


def _client(t):
    return {"t": t, "cls": "all", "p50_ms": 4.0, "p99_ms": 30.0, "sent": 500, "requests": 500, "rejected": 0}


def test_slope_of_a_growing_queue():
    rows = [{"t": t, "pending": 3.0 * t} for t in range(10)]
    assert slope(rows, "pending") == 3.0
    assert slope(rows[:2], "pending") == 0.0


def test_window_reads_settings_and_rows_and_finds_pattern_a():
    w = window_from([_metrics(t) for t in range(10)], [_client(t) for t in range(10)], {}, SETTINGS)
    assert w.instances == 2 and w.max_queue_delay_us == 8000 and w.avg_batch == 6.0 and w.offered_rps == 500
    assert w.compute_us == 2100.0
    assert [f.pattern for f in diagnose(w)] == ["A"]
