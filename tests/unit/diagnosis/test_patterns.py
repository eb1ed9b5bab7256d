"""The diagnosis names each field-guide pattern from a window, and stays quiet on a healthy one; failing requests are
named first, in the server's words, before any latency finding (never "no traffic")."""
from __future__ import annotations

from app.diagnosis.patterns import FAILING_SHARE, Symptoms, diagnose, percent

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


# --- failing requests ----------------------------------------------------------------------------------------------
SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."
# pattern A's window (p99 made of waiting)
TAIL = dict(p50_ms=5, p99_ms=40, queue_us=3000, compute_us=1500, request_us=4500, avg_batch=4, infer_rps=800,
            offered_rps=800, max_batch_size=32, dynamic_batching=True, max_queue_delay_us=8000, latency_n=5000)


def failing(failed: int, ended: int, **kw) -> Symptoms:
    return Symptoms(**{**TAIL, "requests": ended, "attempts": ended, "failed": failed, "ended": ended,
                     "errors_by_kind": {"http_400": failed}, "error_text": SHAPE, **kw})


def test_failures_at_the_threshold_come_first_with_the_servers_words():
    findings = diagnose(failing(10, 1000))  # 1.0 %
    assert [f.pattern for f in findings] == ["failing", "A"], [f.title for f in findings]
    assert findings[0].title == f"1.0 % of requests failing: {SHAPE}"
    assert "10 of 1,000 attempts that ended failed (http_400 10)" in findings[0].evidence
    assert "do not fit the model" in findings[0].suggestion
    below = diagnose(failing(9, 1000))  # 0.9 %: the latency findings alone
    assert [f.pattern for f in below] == ["A"] and 9 / 1000 < FAILING_SHARE


def test_a_window_where_everything_fails_names_only_the_failures_and_the_servers_count():
    w = Symptoms(failed=812, ended=812, requests=812, attempts=812, errors_by_kind={"http_400": 812}, error_text=SHAPE,
               server_failed=0.0, max_batch_size=32)
    (finding,) = diagnose(w)
    assert finding.title == f"100 % of requests failing: {SHAPE}"
    assert "the server counted 0 failed" in finding.evidence and "does not count" in finding.evidence


def test_percentages_never_round_up_to_all():
    assert [percent(s) for s in (1.0, 0.9996, 0.995, 0.5, 0.0123, 0.01)] == \
        ["100 %", "99.9 %", "99.5 %", "50 %", "1.2 %", "1.0 %"]
