"""Retry policy: which failures are retried, how long to wait, and that attempts are bounded."""
from __future__ import annotations

import asyncio
from random import Random

import pytest

from loadgen.classes import Target
from loadgen.client import RequestPath
from loadgen.outcome import Outcome
from loadgen.records import RecordBus
from loadgen.retry import backoff_s, should_retry
from loadgen.spec import RetryKind, RetryPolicy
from tests.unit.loadgen.fakes import FakePool, run_virtual

SHED = b'{"error":"Request timeout expired"}'


def test_none_never_retries_and_attempts_are_capped():
    assert not should_retry(RetryPolicy(), Outcome.TIMEOUT, 1)
    policy = RetryPolicy(RetryKind.IMMEDIATE, max_attempts=3)
    assert should_retry(policy, Outcome.REJECTED, 2) and not should_retry(policy, Outcome.REJECTED, 3)
    assert not should_retry(policy, Outcome.OK, 1) and not should_retry(policy, Outcome.WRONG_OUTPUT, 1)
    assert not should_retry(RetryPolicy(RetryKind.IMMEDIATE, on=("timeout",)), Outcome.REJECTED, 1)


def test_backoff_grows_exponentially_up_to_the_cap():
    policy = RetryPolicy(RetryKind.BACKOFF, base_ms=10, multiplier=2, cap_ms=50, jitter=False)
    assert [backoff_s(policy, n, Random(0)) for n in range(1, 6)] == pytest.approx([0.01, 0.02, 0.04, 0.05, 0.05])
    assert backoff_s(RetryPolicy(RetryKind.IMMEDIATE), 3, Random(0)) == 0.0


def test_full_jitter_spreads_waits_below_the_ceiling():
    policy = RetryPolicy(RetryKind.BACKOFF, base_ms=100, multiplier=2, cap_ms=1000)
    rng = Random(1)
    waits = [backoff_s(policy, 3, rng) for _ in range(5000)]
    assert 0 <= min(waits) and max(waits) <= 0.4
    assert sum(waits) / len(waits) == pytest.approx(0.2, rel=0.05)  # uniform on [0, 0.4]


def run_path(policy: RetryPolicy, status=503, body=SHED, may_retry=lambda: True):
    async def main():
        loop = asyncio.get_running_loop()
        records: list = []
        pool = FakePool(0.001, status, body)
        path = RequestPath(pool, RecordBus([records.extend], batch=1), loop.time, loop.time(), Random(0),
                           may_retry=may_retry)
        last = await path.send(Target("c", "m", retry=policy), b"x")
        return records, last, pool

    return run_virtual(main)


def test_every_attempt_is_recorded_and_attempts_are_bounded():
    records, last, pool = run_path(RetryPolicy(RetryKind.BACKOFF, max_attempts=4, base_ms=10, jitter=False))
    assert pool.requests == 4 and [r.attempt for r in records] == [1, 2, 3, 4]
    assert {(r.outcome, r.error) for r in records} == {(Outcome.REJECTED, "queue_timeout")}
    assert last is records[-1]
    # Backoff 10, 20, 40 ms between attempts (each attempt takes 1 ms on the fake).
    gaps = [b.sent_s - a.done_s for a, b in zip(records, records[1:])]
    assert gaps == pytest.approx([0.01, 0.02, 0.04])
    assert all(r.scheduled_s == records[0].scheduled_s for r in records)


def test_success_ends_retrying_and_a_closed_run_stops_it():
    records, _, pool = run_path(RetryPolicy(RetryKind.IMMEDIATE), status=200, body=b"{}")
    assert pool.requests == 1 and records[0].outcome is Outcome.OK
    records, _, pool = run_path(RetryPolicy(RetryKind.IMMEDIATE), may_retry=lambda: False)
    assert pool.requests == 1
