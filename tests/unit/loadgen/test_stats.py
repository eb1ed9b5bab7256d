"""Statistics from records: per-second rows per class, goodput against the SLA, windows and summaries, the
failures' own words kept first and latest per kind."""
from __future__ import annotations

import json

import numpy as np
import pytest

from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.stats import Bucket, WindowedStats, latest_error, window_rows

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."
BATCH = "inference request batch-size must be <= 32 for 'm'"


def rec(cls="a", sent=0.0, latency=0.01, outcome=Outcome.OK, error="", attempt=1, scheduled=None, late=False):
    return Record(cls, "m", 0, 0, sent if scheduled is None else scheduled, sent, latency, outcome, error, attempt, late)


def failed(done: float, outcome=Outcome.ERROR, error="http_400", detail=SHAPE, cls="a") -> Record:
    """Return a record ended at done: a failure in the server's words (an answer when outcome is OK)."""
    answered = outcome is Outcome.OK
    return Record(cls, "m", 0, 0, done - 0.01, done - 0.01, 0.01, outcome, "" if answered else error, 1, False,
                  "" if answered else detail)


def test_rows_per_second_per_class_and_all():
    stats = WindowedStats({"a": 0.05, "b": 1.0}, t0_epoch=1_000.0)
    records = [rec("a", sent=0.1 + i / 100, latency=0.001 * (i + 1)) for i in range(80)]  # 1..80 ms
    records += [rec("b", sent=0.2, outcome=Outcome.REJECTED, error="queue_timeout"),
                rec("b", sent=0.3, outcome=Outcome.TIMEOUT, error="client_timeout", latency=0.5)]
    stats(records)
    rows = {(r["t"], r["cls"]): r for r in stats.timeline(window_s=10, now_s=1.9)}
    a, b, both = rows[(1000.0, "a")], rows[(1000.0, "b")], rows[(1000.0, "all")]
    assert a["ok"] == a["sent"] == 80 and a["throughput_rps"] == 80
    assert a["goodput_rps"] == 50  # latencies of 1..50 ms are within the 50 ms SLA
    assert a["p50_ms"] == pytest.approx(np.percentile(np.arange(1, 81), 50))
    assert b["rejected"] == 1 and b["timeouts"] == 1 and b["failed"] == 2 and b["p99_ms"] is None
    assert b["errors_by_kind"] == {"queue_timeout": 1, "client_timeout": 1}
    assert both["sent"] == 82 and both["ok"] == 80 and both["failed"] == 2
    assert (1001.0, "a") not in rows  # the second in progress is not shown yet


def test_goodput_counts_lateness_against_the_sla():
    stats = WindowedStats({"a": 0.010})
    stats([rec(sent=0.5, latency=0.005, scheduled=0.5), rec(sent=0.5, latency=0.005, scheduled=0.49, late=True)])
    row = stats.timeline(now_s=2)[0]
    assert row["ok"] == 2 and row["goodput_rps"] == 1 and row["late"] == 1


def test_behind_counts_first_attempts_sent_over_10_ms_after_their_slot():
    """A few ms of scheduler jitter is 'late' (1 ms) but not 'behind'; a retry's wait since the slot is neither."""
    stats = WindowedStats()
    stats([rec(sent=0.5, scheduled=0.495, late=True), rec(sent=0.5, scheduled=0.489, late=True),
           rec(sent=0.5, scheduled=0.2, attempt=2), rec(sent=0.6, scheduled=0.6)])
    row = stats.window(0, 1)["a"]
    assert (row["requests"], row["late"], row["behind"]) == (3, 2, 1), row


def test_timeline_has_empty_seconds_and_a_window():
    stats = WindowedStats()
    stats([rec(sent=0.5), rec(sent=5.5)])
    rows = [r for r in stats.timeline(window_s=3, now_s=6) if r["cls"] == "a"]
    assert [r["t"] for r in rows] == [3.0, 4.0, 5.0]
    assert [r["ok"] for r in rows] == [0, 0, 1] and rows[0]["throughput_rps"] == 0


def test_summary_skips_warmup_and_counts_retries():
    stats = WindowedStats({"a": 1.0}, warmup_s=1.0)
    stats([rec(sent=0.5, latency=0.2)])  # warm-up: not in the summary
    stats([rec(sent=1.0 + i / 10, latency=0.01) for i in range(10)])
    stats([rec(sent=2.5, outcome=Outcome.ERROR, error="http_500"),
           rec(sent=2.6, attempt=2, latency=0.01)])
    s = stats.summary()
    assert s["a"]["sent"] == 12 and s["a"]["requests"] == 11 and s["a"]["retries"] == 1
    assert s["a"]["ok"] == 11 and s["a"]["errors_by_kind"] == {"http_500": 1}
    assert s["a"]["p99_ms"] == pytest.approx(10.0, rel=1e-3)  # whole-run totals: a 0.1 % histogram
    assert s["a"]["throughput_rps"] == pytest.approx(11 / (2.61 - 1.0))
    assert s["all"]["ok"] == 11


def test_window_percentiles_are_those_of_every_sample_merged_not_a_mean_of_seconds():
    rng = np.random.default_rng(5)
    stats = WindowedStats(t0_epoch=1_000.0)
    records, expected = [], []
    for second, n, scale in ((0, 600, 0.002), (1, 3, 0.5), (2, 600, 0.002), (3, 50, 0.01)):
        for latency in rng.exponential(scale, n):
            sent = second + 0.5 * rng.random()
            records.append(rec("a", sent=sent, latency=float(latency)))
            if 1 <= int(sent + latency) < 3:  # whole seconds 1 and 2 of the window [1, 3)
                expected.append(latency * 1000)
    stats(records)
    row = stats.window(1.0, 3.0)["a"]
    assert row["latency_n"] == len(expected) and row["seconds"] == 2
    assert row["p99_ms"] == pytest.approx(np.percentile(expected, 99))
    assert row["p50_ms"] == pytest.approx(np.percentile(expected, 50))
    per_second = [r["p99_ms"] for r in stats.timeline(10, now_s=4) if r["cls"] == "a" and r["t"] in (1001.0, 1002.0)]
    assert abs(row["p99_ms"] - np.mean(per_second)) > 10  # the mean of per-second p99s would be far off


def test_window_takes_only_whole_seconds_and_counts_all_classes():
    stats = WindowedStats()
    stats([rec("a", sent=0.2), rec("b", sent=1.2), rec("a", sent=2.5)])
    out = stats.window(0.5, 3.0)  # second 0 is partial: left out
    assert out["all"]["sent"] == 2 and out["a"]["sent"] == 1 and out["b"]["sent"] == 1
    assert out["all"]["offered_rps"] == 1.0 and out["all"]["span_s"] == (1, 3)


def test_requests_held_by_a_reload_are_counted_but_can_be_left_out():
    band = (10.0, 12.0)  # a reload from epoch 10 to 12; the run started at epoch 0

    def held(model, sent, done):
        return sent <= band[1] and done >= band[0]

    stats = WindowedStats(held=held)
    stats([rec(sent=9.0, latency=0.005), rec(sent=9.9, latency=2.0), rec(sent=11.0, latency=1.05),
           rec(sent=13.0, latency=0.006)])
    held_out = stats.window(0, 20, include_held=False)["all"]
    counted = stats.window(0, 20)["all"]
    assert held_out["ok"] == counted["ok"] == 4 and held_out["held"] == 2
    assert held_out["latency_n"] == 2 and held_out["p99_ms"] < 10
    assert counted["latency_n"] == 4 and counted["p99_ms"] > 1000


def test_reset_starts_the_window_and_totals_again():
    stats = WindowedStats()
    stats([rec(sent=0.5, latency=1.0), rec(sent=1.5)])
    stats.reset(2.0)
    assert stats.summary()["all"]["sent"] == 0 and stats.window(0, 10)["all"]["sent"] == 0
    stats([rec(sent=2.5, latency=0.003)])
    assert stats.summary()["all"]["sent"] == 1 and stats.summary()["all"]["p99_ms"] < 10


def test_rows_keep_the_first_and_latest_text_of_each_kind_and_the_failed_share():
    stats = WindowedStats(t0_epoch=1_000.0)
    stats([failed(0.2), failed(0.3, detail=SHAPE.replace("[4]", "[8]")), failed(0.4, Outcome.OK),
           failed(0.5, error="http_500", detail="boom"), failed(1.5, Outcome.OK), failed(1.6, Outcome.OK),
           failed(1.7, Outcome.CANCELLED, "cancelled", "the run stopped"), failed(1.8, detail=BATCH)])
    row = stats.window(0, 2)["all"]
    assert row["failed"] == 4 and row["ok"] == 3 and row["failed_share"] == 4 / 7  # cancelled ended no verdict
    shape = row["error_texts"]["http_400"]
    assert shape == {"count": 3, "first": SHAPE, "first_t": 1000.2, "latest": BATCH, "latest_t": 1001.8}, shape
    assert row["error_texts"]["http_500"]["count"] == 1 and "cancelled" not in row["error_texts"]  # no failure
    assert latest_error(row)["latest"] == BATCH and latest_error(row)["kind"] == "http_400"
    quiet = stats.window(1, 2)["a"]  # second 1: two answers, one failure
    assert quiet["failed_share"] == 1 / 3 and quiet["error_texts"]["http_400"]["first"] == BATCH
    assert WindowedStats().window(0, 1)["all"]["failed_share"] is None and latest_error({"error_texts": {}}) is None


def test_merge_keeps_the_earliest_first_and_the_latest_latest_and_to_dict_round_trips():
    early, late = Bucket(), Bucket()
    early.count_end(failed(5.0, detail="first words"), False, at=105.0)
    early.count_end(failed(6.0, detail="middle words"), False, at=106.0)
    late.count_end(failed(1.0, detail="earlier run's words"), False, at=101.0)  # another run, earlier on the clock
    late.count_end(failed(9.0, detail="last words"), False, at=109.0)
    merged = Bucket()
    for bucket in (early, late):
        merged.merge(bucket)
    assert merged.texts == {"http_400": [101.0, "earlier run's words", 109.0, "last words"]}
    assert early.texts["http_400"] == [105.0, "first words", 106.0, "middle words"], "merge copies, never aliases"
    again = Bucket.from_dict(json.loads(json.dumps(merged.to_dict())))
    assert again.texts == merged.texts and again.errors == merged.errors
    assert window_rows({"a": again}, 10)["all"]["error_texts"]["http_400"]["count"] == 4
    assert Bucket.from_dict({"outcomes": {}}).texts == {}  # a bucket stored before texts were kept
