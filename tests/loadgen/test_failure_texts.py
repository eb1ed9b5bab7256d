"""Failures in their own words: cut short on the record, kept first and latest per kind by the statistics, carried
cheaply over the worker's pipe."""
from __future__ import annotations

import json

from loadgen.connection import Response
from loadgen.outcome import DETAIL_CHARS, Outcome, exception_detail, response_detail
from loadgen.records import Record
from loadgen.stats import Bucket, WindowedStats, latest_error, window_rows
from loadgen.worker import decode, encode

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."
BATCH = "inference request batch-size must be <= 32 for 'm'"


def rec(done: float, outcome=Outcome.ERROR, error="http_400", detail=SHAPE, cls="a") -> Record:
    answered = outcome is Outcome.OK
    return Record(cls, "m", 0, 0, done - 0.01, done - 0.01, 0.01, outcome, "" if answered else error, 1, False,
                  "" if answered else detail)


def test_the_servers_text_is_kept_without_its_request_id_and_cut_short():
    long = "[request id: <id_unknown>] " + SHAPE + " NOTE: " + "x" * 600
    detail = response_detail(Response(400, json.dumps({"error": long}).encode()))
    assert detail.startswith(SHAPE) and len(detail) == DETAIL_CHARS and detail.endswith("…"), detail
    assert response_detail(Response(502, b"")) == "HTTP 502 with an empty body"
    assert exception_detail(TimeoutError()) == "no response in time (the client's timeout)"
    assert exception_detail(ConnectionError("connection closed by the server")) == "connection closed by the server"


def test_rows_keep_the_first_and_latest_text_of_each_kind_and_the_failed_share():
    stats = WindowedStats(t0_epoch=1_000.0)
    stats([rec(0.2), rec(0.3, detail=SHAPE.replace("[4]", "[8]")), rec(0.4, Outcome.OK), rec(0.5, error="http_500",
                                                                                                detail="boom"),
           rec(1.5, Outcome.OK), rec(1.6, Outcome.OK), rec(1.7, Outcome.CANCELLED, "cancelled", "the run stopped"),
           rec(1.8, detail=BATCH)])
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
    early.count_end(rec(5.0, detail="first words"), False, at=105.0)
    early.count_end(rec(6.0, detail="middle words"), False, at=106.0)
    late.count_end(rec(1.0, detail="earlier run's words"), False, at=101.0)  # another run, earlier on the clock
    late.count_end(rec(9.0, detail="last words"), False, at=109.0)
    merged = Bucket()
    for bucket in (early, late):
        merged.merge(bucket)
    assert merged.texts == {"http_400": [101.0, "earlier run's words", 109.0, "last words"]}
    assert early.texts["http_400"] == [105.0, "first words", 106.0, "middle words"], "merge copies, never aliases"
    again = Bucket.from_dict(json.loads(json.dumps(merged.to_dict())))
    assert again.texts == merged.texts and again.errors == merged.errors
    assert window_rows({"a": again}, 10)["all"]["error_texts"]["http_400"]["count"] == 4
    assert Bucket.from_dict({"outcomes": {}}).texts == {}  # a bucket stored before texts were kept


def test_the_pipe_carries_each_text_once_per_kind_until_it_changes():
    records = [rec(0.1 * i) for i in range(1, 1001)]  # a failing run: the same text a thousand times
    records[500] = rec(50.05, detail=BATCH)
    records[700] = rec(70.05, error="client_timeout", outcome=Outcome.TIMEOUT, detail="no response within 5 s")
    records += [rec(101.0, Outcome.OK),
                Record("s", "m", 0, 0, 1.0, 1.0, 0.3, Outcome.OK, "", 1, False, "", 0.02, 12)]  # a streamed one
    sent, seen = {}, {}
    rows = encode(records[:600], sent) + encode(records[600:], sent)  # two batches of one run
    assert decode(rows[:600], seen) + decode(rows[600:], seen) == records
    texts = [cell for row in rows for cell in row[11:12] if isinstance(cell, str)]
    assert texts == [SHAPE, BATCH, SHAPE, "no response within 5 s", ""], texts  # each change once; '' opens a stream
    bare = len(json.dumps([row[:11] for row in rows]))  # the records without any text
    plain = len(json.dumps([[*row[:11], records[i].detail] for i, row in enumerate(rows)])) - bare
    packed = len(json.dumps(rows)) - bare
    print(f"1,002 records: texts cost {packed:,} bytes sent on change, {plain:,} sent with every record")
    assert packed < 4 * len(records) and packed < plain / 20  # ",0" a record, where every text costs ~75 bytes
    assert decode(encode(records)) == records  # one batch alone needs no state
    assert len(encode([rec(1.0, Outcome.OK)])[0]) == 11, "an answered plain request carries no extra field"
