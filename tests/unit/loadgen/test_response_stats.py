"""Statistics of streamed answers in stats Buckets: counts, rates, first/gap percentiles merged from samples."""
from __future__ import annotations

import pytest

from loadgen.histogram import Histogram
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.stats import Bucket, WindowedStats, window_rows


def streamed(sent: float, latency: float, first: float | None, responses: int, outcome=Outcome.OK,
             cls: str = "c") -> Record:
    return Record(cls, "m", 0, 0, sent, sent, latency, outcome, "" if outcome is Outcome.OK else "x", 1, False,
                  "", first, responses)


def plain(sent: float, latency: float) -> Record:
    return Record("c", "m", 0, 0, sent, sent, latency, Outcome.OK, "", 1, False)


def bucket_of(*records: Record, held: bool = False) -> Bucket:
    bucket = Bucket()
    for r in records:
        bucket.count_sent(r)
        bucket.count_end(r, True, held)
    return bucket


def test_a_stream_counts_its_responses_first_and_mean_gap():
    row = bucket_of(streamed(0.0, 0.011, 0.003, 5)).row(2.0)
    # 5 responses, the first at 3 ms, the final one at 11 ms: 8 ms over 4 gaps
    assert row["responses"] == 5 and row["responses_rps"] == 2.5
    assert row["first_p50_ms"] == pytest.approx(3.0) and row["gap_p50_ms"] == pytest.approx(2.0)
    assert (row["first_n"], row["gap_n"]) == (1, 1)


def test_plain_requests_failures_and_single_responses_add_no_gaps():
    row = bucket_of(plain(0.0, 0.01), streamed(0.0, 0.02, 0.001, 3, Outcome.TIMEOUT),
                    streamed(0.0, 0.004, 0.004, 1), streamed(0.0, 0.002, None, 0)).row(1.0)
    assert row["responses"] == 1  # the failed stream's 3 responses are not counted
    assert (row["first_n"], row["gap_n"]) == (1, 0) and row["gap_p50_ms"] is None
    assert row["first_p99_ms"] == pytest.approx(4.0)


def test_plain_buckets_row_none_and_store_nothing_more():
    bucket = bucket_of(plain(0.0, 0.01))
    row = bucket.row(1.0)
    assert row["responses"] == 0 and row["first_p50_ms"] is None and row["gap_p99_ms"] is None
    assert not {"responses", "first", "gaps"} & set(bucket.to_dict())


def test_percentiles_come_from_merged_samples_not_averages():
    a = bucket_of(*(streamed(0.0, 0.100, 0.001, 2) for _ in range(9)))  # first 1 ms (nine requests)
    b = bucket_of(streamed(0.0, 0.100, 0.050, 2))  # one at 50 ms
    merged = window_rows({"a": a, "b": b}, 1)["all"]
    assert merged["first_p50_ms"] == pytest.approx(1.0)  # the mean of the two p50s would say 25.5 ms
    assert merged["first_n"] == 10 and merged["responses"] == 20


def test_a_stored_bucket_comes_back_with_its_response_samples():
    bucket = bucket_of(streamed(0.0, 0.011, 0.003, 5), streamed(0.0, 0.020, 0.002, 3))
    bucket.merge(bucket_of(streamed(0.0, 0.009, 0.004, 2), held=True))
    again = Bucket.from_dict(bucket.to_dict())
    assert again.row(1.0) == bucket.row(1.0)
    assert again.row(1.0, include_held=False)["first_n"] == 2 and again.row(1.0)["first_n"] == 3


def test_run_totals_keep_response_samples_in_a_histogram():
    stats = WindowedStats()
    stats([streamed(0.5, 0.011, 0.003, 5, cls="x"), streamed(1.5, 0.005, 0.001, 3, cls="y")])
    summary = stats.summary()
    assert isinstance(stats.totals["x"].responses.first, Histogram)
    assert summary["all"]["responses"] == 8 and summary["all"]["first_n"] == 2
    assert summary["x"]["gap_p50_ms"] == pytest.approx(2.0, rel=1e-3)  # histogram bins: 0.1 % wide
