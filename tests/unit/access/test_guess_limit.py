"""Guessing the operator token is slow: a doubling wait per client and session, a lockout, a fake clock."""
from __future__ import annotations

from app.access.guess_limit import GuessLimiter, GuessPolicy, TokenExchange
from tests.helpers import Clock

TOKEN = "the-right-token-of-28-chars!"


def test_the_wait_doubles_and_is_capped():
    policy = GuessPolicy(first_delay_s=1, max_delay_s=60)
    assert [policy.delay_s(n) for n in (0, 1, 2, 3, 4, 7, 8, 500)] == [0, 1, 2, 4, 8, 60, 60, 60]


def test_forty_fast_guesses_then_the_right_token_is_refused():
    """The review's attack: 40 wrong tokens in 3 s from one tab, then the right one."""
    clock = Clock(1000.0)
    gate = TokenExchange(clock)
    outcomes = []
    for _ in range(40):
        outcomes.append(gate.exchange("guess", TOKEN, "192.0.2.9", "tab"))
        clock.now += 3 / 40
    right = gate.exchange(TOKEN, TOKEN, "192.0.2.9", "tab")
    compared = [o for o in outcomes if o.reason.startswith("wrong")]
    assert len(compared) == 2, [o.reason for o in outcomes[:5]]  # 1 s after the first, then 2 s: only two checked
    assert not right.accepted and right.reason.startswith("not checked: 2 wrong tokens lately: wait"), right


def test_waits_grow_then_a_lockout_refuses_even_the_right_token():
    clock = Clock(1000.0)
    gate = TokenExchange(clock)
    waits = []
    for n in range(1, 11):
        outcome = gate.exchange("guess", TOKEN, "192.0.2.9", "tab")
        assert outcome.reason.startswith("wrong operator token"), (n, outcome)
        held = gate.refusal("192.0.2.9", "tab")
        waits.append(round(held.retry_in_s))
        clock.now += held.retry_in_s
    print("waits after each wrong token:", waits)
    assert waits[:7] == [1, 2, 4, 8, 16, 32, 60] and waits[7:9] == [60, 60], waits
    assert waits[9] == 600, waits  # the 10th in the window locks for the window (10 min)
    clock.now -= 1  # one second before the lock ends
    locked = gate.exchange(TOKEN, TOKEN, "192.0.2.9", "tab")
    assert not locked.accepted and "locked: 10 wrong tokens within 10 min" in locked.reason, locked
    assert "the right one too" in locked.reason
    clock.now += 1
    assert gate.exchange(TOKEN, TOKEN, "192.0.2.9", "tab").accepted
    assert gate.refusal("192.0.2.9", "tab") is None  # the right token clears the client's and the session's count


def test_a_new_session_from_the_same_client_still_waits_and_another_client_does_not():
    clock = Clock(1000.0)
    gate = TokenExchange(clock)
    gate.exchange("guess", TOKEN, "192.0.2.9", "tab-1")
    clock.now += 1.1
    assert gate.exchange("guess", TOKEN, "192.0.2.9", "tab-1").reason.startswith("wrong")  # now 2 s to wait
    clock.now += 1.5
    outcome = gate.exchange(TOKEN, TOKEN, "192.0.2.9", "tab-2")  # a fresh tab: the client's wait still holds
    assert not outcome.accepted and "wait 1 s" in outcome.reason, outcome
    assert gate.exchange(TOKEN, TOKEN, "198.51.100.4", "tab-3").accepted


def test_one_session_behind_many_forged_addresses_still_waits():
    clock = Clock(1000.0)
    gate = TokenExchange(clock)
    gate.exchange("guess", TOKEN, "192.0.2.1", "tab")
    outcome = gate.exchange(TOKEN, TOKEN, "192.0.2.2", "tab")
    assert not outcome.accepted and "wait 1 s" in outcome.reason, outcome


def test_many_clients_together_lock_everyone_out():
    clock = Clock(1000.0)
    gate = TokenExchange(clock)
    for n in range(50):
        assert gate.exchange("guess", TOKEN, f"10.0.{n}.1", f"tab-{n}").reason.startswith("wrong")
    outcome = gate.exchange(TOKEN, TOKEN, "198.51.100.4", "operator")
    assert not outcome.accepted and "locked: 50 wrong tokens" in outcome.reason, outcome
    clock.now += 600
    assert gate.exchange(TOKEN, TOKEN, "198.51.100.4", "operator").accepted


def test_old_wrong_tokens_leave_the_window():
    clock = Clock(1000.0)
    limiter = GuessLimiter(GuessPolicy(first_delay_s=1, max_failures=3, window_s=60), clock)
    limiter.failed(["k"])
    clock.now += 30
    limiter.failed(["k"])
    clock.now += 31  # the first is now 61 s old, the second 31 s
    limiter.failed(["k"])  # two in the window: no lockout
    assert "wait 2 s" in limiter.refusal(["k"]).reason


def test_memory_is_bounded():
    limiter = GuessLimiter(GuessPolicy(), Clock(1000.0), max_keys=100)
    for n in range(1000):
        limiter.failed([f"client {n}"])
    assert len(limiter._records) == 100 and limiter.refusal(["client 999"]) and not limiter.refusal(["client 0"])
