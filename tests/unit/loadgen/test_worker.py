"""The worker's pipe, without the process: records cross it unchanged, failure texts once per kind until they
change; an update outside the limits table is refused and the run keeps its load. The process itself:
tests/contract/loadgen/test_worker.py."""
from __future__ import annotations

import json

from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec
from loadgen.worker import _update_fits, decode, encode

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."
BATCH = "inference request batch-size must be <= 32 for 'm'"
NAN = float("nan")


def failed(done: float, outcome=Outcome.ERROR, error="http_400", detail=SHAPE, cls="a") -> Record:
    """Return a record ended at done: a failure in the server's words (an answer when outcome is OK)."""
    answered = outcome is Outcome.OK
    return Record(cls, "m", 0, 0, done - 0.01, done - 0.01, 0.01, outcome, "" if answered else error, 1, False,
                  "" if answered else detail)


def test_records_cross_the_pipe_unchanged():
    records = [Record("web", "gpu_sim", 2, 7, 0.25, 0.2512, 0.0031, Outcome.REJECTED, "queue_full", 2, True),
               Record("x", "m", 0, 0, 1.0, 1.0, 0.5, Outcome.OK, "", 1, False)]
    assert decode(encode(records)) == records


def test_the_pipe_carries_each_text_once_per_kind_until_it_changes():
    records = [failed(0.1 * i) for i in range(1, 1001)]  # a failing run: the same text a thousand times
    records[500] = failed(50.05, detail=BATCH)
    records[700] = failed(70.05, error="client_timeout", outcome=Outcome.TIMEOUT, detail="no response within 5 s")
    records += [failed(101.0, Outcome.OK),
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
    assert len(encode([failed(1.0, Outcome.OK)])[0]) == 11, "an answered plain request carries no extra field"


def test_the_worker_keeps_a_run_s_load_when_an_update_is_outside_the_table(caplog):
    run = LoadRun(LoadSpec(model="gpu_sim"), "http://127.0.0.1:9", [])  # never run: only its spec is read
    assert _update_fits(run, {"op": "update", "concurrency": 200})
    assert not _update_fits(run, {"op": "update", "concurrency": 1000})
    assert not _update_fits(run, {"op": "update", "rate": NAN})
    assert "update refused, the run keeps its load: concurrency = 1000" in caplog.text
