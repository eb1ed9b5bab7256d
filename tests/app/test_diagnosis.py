"""The diagnosis names each field-guide pattern from a window, and stays quiet on a healthy one."""
from __future__ import annotations

from app.diagnosis.patterns import Symptoms, diagnose

HEALTHY = Symptoms(p50_ms=5, p99_ms=8, queue_us=500, compute_us=3000, request_us=4000, avg_batch=4, infer_rps=800,
                 offered_rps=800, requests=1000, attempts=1000, max_batch_size=32, dynamic_batching=True,
                 max_queue_delay_us=500, preferred_sizes=(4, 8))


def _patterns(w):
    return [f.pattern for f in diagnose(w)]


def test_healthy_window_has_no_findings():
    assert diagnose(HEALTHY) == []


def test_pattern_a_tail_made_of_waiting_suggests_a_shorter_delay():
    w = Symptoms(**{**HEALTHY.__dict__, "p99_ms": 40, "queue_us": 3000, "request_us": 4500, "max_queue_delay_us": 8000})
    (finding,) = diagnose(w)
    assert finding.pattern == "A"
    assert finding.knobs == {"max_queue_delay_microseconds": 2000}


def test_pattern_a_needs_the_tail_to_be_waiting_not_compute():
    w = Symptoms(**{**HEALTHY.__dict__, "p99_ms": 40, "queue_us": 300, "request_us": 4500})
    assert "A" not in _patterns(w)


def test_pattern_b_queue_builds_when_arrivals_outrun_service():
    w = Symptoms(**{**HEALTHY.__dict__, "offered_rps": 1200, "infer_rps": 800, "queue_us": 9000, "pending_trend": 30})
    finding = next(f for f in diagnose(w) if f.pattern == "B")
    assert finding.knobs == {"instance_count": 2}


def test_pattern_c_bigger_batches_slower_per_item():
    w = Symptoms(**{**HEALTHY.__dict__, "per_item_us_by_batch": {1: 2000, 4: 700, 8: 500, 16: 900}})
    finding = next(f for f in diagnose(w) if f.pattern == "C")
    assert finding.knobs == {"preferred_batch_size": (8,)}


def test_batch_stuck_at_one_without_delay_suggests_a_delay():
    w = Symptoms(**{**HEALTHY.__dict__, "avg_batch": 1.0, "max_queue_delay_us": 0})
    finding = next(f for f in diagnose(w) if f.pattern == "stuck")
    assert finding.knobs == {"max_queue_delay_microseconds": 500}


def test_batch_stuck_without_dynamic_batching_suggests_enabling_it():
    w = Symptoms(**{**HEALTHY.__dict__, "avg_batch": 1.0, "dynamic_batching": False})
    finding = next(f for f in diagnose(w) if f.pattern == "stuck")
    assert finding.knobs["dynamic_batching"] is True


def test_rejections_and_retry_amplification_are_named():
    w = Symptoms(**{**HEALTHY.__dict__, "rejected": 50, "attempts": 1900})
    assert {"rejections", "retries"} <= set(_patterns(w))


def test_pattern_a_suggests_only_delays_the_knob_offers():
    from app.config.knobs import DELAYS_US  # noqa: PLC0415

    for delay in (10000, 2000, 5000, 1000, 20000):
        w = Symptoms(**{**HEALTHY.__dict__, "p99_ms": 40, "queue_us": 0.9 * delay, "request_us": 1.5 * 0.9 * delay,
                      "max_queue_delay_us": delay})
        (finding,) = [f for f in diagnose(w) if f.pattern == "A"]
        suggested = finding.knobs["max_queue_delay_microseconds"]
        assert suggested in DELAYS_US and suggested < delay, (delay, suggested)


def test_pattern_a_does_not_blame_a_short_delay_for_a_long_queue():
    w = Symptoms(**{**HEALTHY.__dict__, "p99_ms": 60, "queue_us": 15800, "request_us": 19000, "max_queue_delay_us": 500})
    (finding,) = [f for f in diagnose(w) if f.pattern == "A"]
    assert finding.knobs == {} and "queueing, not the batching delay" in finding.suggestion


def test_pattern_b_is_not_named_while_the_queue_drains():
    w = Symptoms(**{**HEALTHY.__dict__, "offered_rps": 600, "infer_rps": 800, "queue_us": 9000, "pending": 10})
    assert "B" not in _patterns(w)


def test_pattern_c_suggests_a_size_the_knob_offers():
    w = Symptoms(**{**HEALTHY.__dict__, "per_item_us_by_batch": {1: 2000, 6: 400, 12: 900}})
    finding = next(f for f in diagnose(w) if f.pattern == "C")
    assert finding.knobs == {"preferred_batch_size": (4,)}
