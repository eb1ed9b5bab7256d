"""When to send a failed request again, and how long to wait first."""
from __future__ import annotations

from random import Random

from loadgen.outcome import Outcome
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
