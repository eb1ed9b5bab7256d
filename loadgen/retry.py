"""When to send a failed request again, and how long to wait first."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from random import Random

from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import RetryKind, RetryPolicy


def should_retry(policy: RetryPolicy, outcome: Outcome, attempt: int) -> bool:
    """Return True when an attempt that ended so deserves another try."""
    return (
        policy.kind is not RetryKind.NONE
        and attempt < policy.max_attempts
        and outcome in policy.on
    )


def backoff_s(policy: RetryPolicy, attempt: int, rng: Random) -> float:
    """Return the wait before attempt+1: none when immediate, else capped exponential with full jitter."""
    if policy.kind is not RetryKind.BACKOFF:
        return 0.0
    ceiling = min(policy.cap_ms, policy.base_ms * policy.multiplier ** (attempt - 1)) / 1000.0
    return rng.uniform(0.0, ceiling) if policy.jitter else ceiling


CONNECT_PAUSE_S = 0.1  # after a refused connection: do not spin while the server is down


async def retried(attempt: Callable[[int, float | None], Awaitable[Record]], policy: RetryPolicy,
                  may_retry: Callable[[], bool], rng: Random, scheduled_s: float | None = None) -> Record:
    """Run attempt(n, scheduled_s) until the policy (or the run's retry budget, may_retry) says stop; return the last
    record. The one retry loop of the event-loop paths (HTTP and gRPC): a refused connection pauses before the next
    attempt, a retry waits its backoff."""
    n = 1
    while True:
        record = await attempt(n, scheduled_s)
        scheduled_s = record.scheduled_s
        if record.error == "connect":
            await asyncio.sleep(CONNECT_PAUSE_S)
        if not (should_retry(policy, record.outcome, n) and may_retry()):
            return record
        delay = backoff_s(policy, n, rng)
        if delay > 0:
            await asyncio.sleep(delay)
        n += 1
