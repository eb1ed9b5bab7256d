"""The record bus: batches, a failing subscriber, delivery on the bus's own thread."""
from __future__ import annotations

import threading

from loadgen.outcome import Outcome
from loadgen.records import Record, RecordBus


def rec(cls="a", sent=0.0, latency=0.01, outcome=Outcome.OK, error="", attempt=1, scheduled=None, late=False):
    return Record(cls, "m", 0, 0, sent if scheduled is None else scheduled, sent, latency, outcome, error, attempt, late)


def test_bus_batches_and_survives_a_failing_subscriber():
    got: list = []

    def broken(batch):
        raise RuntimeError("sink bug")

    bus = RecordBus([broken, got.extend], batch=3)
    for i in range(7):
        bus.emit(rec(sent=i))
    assert len(got) == 6
    bus.flush()
    assert len(got) == 7


def test_records_emitted_by_other_threads_are_delivered_on_the_bus_thread_only():
    delivered_on: set = set()
    got: list = []
    bus = RecordBus([lambda batch: (delivered_on.add(threading.get_ident()), got.extend(batch))], batch=4)
    workers = [threading.Thread(target=lambda k=k: [bus.emit(rec(sent=k * 1000 + i)) for i in range(500)])
               for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert got == []  # full batches from worker threads wait for the bus's own thread
    bus.flush()
    assert delivered_on == {threading.get_ident()}
    assert sorted(r.sent_s for r in got) == sorted(k * 1000 + i for k in range(4) for i in range(500))
