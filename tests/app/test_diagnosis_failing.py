"""Failing requests are named first, in the server's words, before any latency finding; never "no traffic"."""
from __future__ import annotations

from app.config.settings import DynamicBatching, ModelSettings
from app.diagnosis.patterns import FAILING_SHARE, Symptoms, diagnose, percent
from app.diagnosis.diagnose import window_from
from app.timeline.figures import Figures
from app.timeline.sides import ServerFigures, client_rows
from app.ui.traffic.failures import failed_cell, failing_alert, failure_lines

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."
# pattern A's window (p99 made of waiting), as in test_diagnosis
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


def test_the_screen_texts_say_the_share_each_kinds_words_and_the_servers_count():
    row = {"ok": 0, "failed": 812, "failed_share": 1.0, "errors_by_kind": {"http_400": 800, "connect": 12},
           "error_texts": {"http_400": {"count": 800, "first": "first [words]", "first_t": 1e9, "latest": SHAPE,
                                        "latest_t": 1e9 + 5}}}
    assert failed_cell(row) == "100.0 (http_400 800, connect 12)"
    assert failed_cell({}) == "—"
    server = ServerFigures(intervals=10, fail_count=0.0, fail_by_reason={"OTHER": 0.0})
    lines = failure_lines(row, {"m": server}, 10)
    assert lines[0].startswith("**Requests are failing: 100 % of the attempts that ended in the last 10 s**")
    assert "`http_400` × 800 — latest" in lines[1] and "first [words]" not in lines[1]  # escaped for Markdown
    assert r"first \[words\]" in lines[1] and "`connect` × 12 (no words recorded)" == lines[2]
    assert "failed requests 0" in lines[3] and "failures by reason (req/s): none" in lines[3]
    assert "only the client sees these" in lines[3], lines[3]
    assert failure_lines({"failed": 0}, {}, 10) == []
    assert failing_alert(9, 1000, None, "last 10 s") is None
    alert = failing_alert(10, 1000, {"latest": "x"}, "last 10 s")
    assert alert == "**1.0 % of requests failing** (10 of 1,000, last 10 s): x"


def test_pattern_a_window_from_settings_still_stands_without_failures():
    settings = ModelSettings(max_batch_size=32, dynamic_batching=DynamicBatching(max_queue_delay_microseconds=8000))
    client = {"all": {"p50_ms": 4.0, "p99_ms": 30.0, "latency_n": 5000, "ok": 5000, "failed": 0, "sent": 5000,
                      "requests": 5000}}
    server = {"queue_us": 6000.0, "compute_us": 2100.0, "request_us": 8100.0, "avg_batch": 6.0, "infer_rps": 500.0}
    w = window_from(Figures("m", 0.0, 10.0, ServerFigures.from_dict(server), client_rows(client)), settings)
    assert w.failed_share == 0.0 and [f.pattern for f in diagnose(w)] == ["A"]


def test_percentages_never_round_up_to_all():
    assert [percent(s) for s in (1.0, 0.9996, 0.995, 0.5, 0.0123, 0.01)] == \
        ["100 %", "99.9 %", "99.5 %", "50 %", "1.2 %", "1.0 %"]
