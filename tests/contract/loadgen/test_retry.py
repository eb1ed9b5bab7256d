"""Retries against the real server: every attempt recorded and counted, attempts bounded; no policy sends once. (A
retry storm and its cure are a measurement: the retry-storm scenario.)"""
from __future__ import annotations

from collections import Counter

from loadgen.outcome import Outcome
from loadgen.spec import LoadSpec, RetryKind, RetryPolicy, TrafficClass
from tests.contract.loadgen.serverkit import run_load


def test_timeouts_are_retried_and_bounded(triton):
    # gpu_sim needs more than 2 ms per request: a 1 ms client timeout always expires.
    policy = RetryPolicy(RetryKind.BACKOFF, max_attempts=3, base_ms=5, cap_ms=20)
    # every attempt fails by design: no failure-streak stop (loadgen/watchdog.py), which on a busy machine
    # could end the run between a chain's attempts
    spec = LoadSpec(concurrency=2, duration_s=None, max_requests=10, stop_when_all_fail_s=None,
                    classes=(TrafficClass(timeout_ms=1.0, retry=policy),))
    records, summary, _ = run_load(triton, spec)
    assert Counter(r.attempt for r in records) == {1: 10, 2: 10, 3: 10}, \
        [(r.attempt, r.outcome, r.error, round(r.done_s, 3)) for r in records]
    assert {(r.outcome, r.error) for r in records} == {(Outcome.TIMEOUT, "client_timeout")}
    assert summary["all"]["requests"] == 10 and summary["all"]["sent"] == 30 and summary["all"]["retries"] == 20


def test_no_retry_policy_sends_once(triton):
    spec = LoadSpec(concurrency=2, duration_s=None, max_requests=6, classes=(TrafficClass(timeout_ms=1.0),))
    records, _, _ = run_load(triton, spec)
    assert len(records) == 6 and {r.attempt for r in records} == {1}
