"""Event log and before/after impact of a change."""
from __future__ import annotations

from app.events import EventLog, impact


def test_event_log_is_bounded_and_filtered_by_model():
    now = iter(range(100))
    log = EventLog(limit=3, clock=lambda: float(next(now)))
    for i in range(5):
        log.add("gpu_sim" if i % 2 else "mlp", "apply", f"change {i}")
    assert [e.text for e in log.list()] == ["change 2", "change 3", "change 4"]
    assert [e.text for e in log.list("gpu_sim")] == ["change 3"]


def test_impact_compares_the_spans_before_and_after_a_change():
    log = EventLog(clock=lambda: 100.0)
    event = log.add("gpu_sim", "apply", "delay 0 -> 2000")
    rows = [{"t": t, "avg_batch": 1.0 if t < 100 else 6.0, "p99_ms": None} for t in range(80, 120)]
    result = impact(event, rows)
    assert result["avg_batch"] == (1.0, 6.0)
    assert result["p99_ms"] == (None, None)
