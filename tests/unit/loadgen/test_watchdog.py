"""A run whose every request fails stops itself: the watchdog on records and an injected clock, no server."""
from __future__ import annotations

import json

import pytest

from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec
from loadgen.specfile import spec_from_dict, spec_to_dict
from loadgen.watchdog import Stopped, Watchdog
from tests.helpers import Clock

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."


def failed(done: float, detail: str = SHAPE, error: str = "http_400") -> Record:
    return Record("c", "m", 0, 0, done - 0.01, done - 0.01, 0.01, Outcome.ERROR, error, 1, False, detail)


def ok(done: float) -> Record:
    return Record("c", "m", 0, 0, done - 0.01, done - 0.01, 0.01, Outcome.OK, "", 1, False)


def feed(dog: Watchdog, clock: Clock, records: list[Record]) -> None:
    """Deliver records one second's batch at a time, the clock at each batch's last end."""
    by_second: dict[int, list[Record]] = {}
    for r in records:
        by_second.setdefault(int(r.done_s), []).append(r)
    for second in sorted(by_second):
        clock.now = max(r.done_s for r in by_second[second])
        dog(by_second[second])


def test_every_request_failing_for_the_span_stops_the_run_with_the_servers_words():
    clock, stops = Clock(), []
    dog = Watchdog(10.0, lambda: stops.append(clock.now), clock)
    feed(dog, clock, [failed(0.1 * i) for i in range(1, 99)])  # 0.1 .. 9.8 s: not yet 10 s
    assert stops == [] and dog.reason is None
    dog.check()  # nothing to raise yet
    feed(dog, clock, [failed(10.2), failed(10.3)])
    assert stops == [10.3], stops
    assert dog.reason == f"every request failed for 10 s (100 of 100): {SHAPE}"
    with pytest.raises(Stopped, match=r"every request failed for 10 s \(100 of 100\): unexpected shape"):
        dog.check()
    feed(dog, clock, [failed(11.0)])
    assert stops == [10.3], "stopped once"


def test_one_success_starts_the_streak_again_and_cancelled_attempts_do_not_count():
    clock, stops = Clock(), []
    dog = Watchdog(10.0, lambda: stops.append(clock.now), clock)
    records = [failed(0.5 * i) for i in range(1, 20)] + [ok(9.9)]  # failing from 0.5 s, one answer at 9.9 s
    records += [failed(10.0 + 0.5 * i) for i in range(1, 20)]  # failing again until 19.5 s: 9.5 s of streak
    cancelled = Record("c", "m", 0, 0, 19.0, 19.0, 0.7, Outcome.CANCELLED, "cancelled", 1, False)
    feed(dog, clock, [*records, cancelled])
    assert stops == [], dog.since
    feed(dog, clock, [failed(20.6)])
    assert stops == [20.6] and "(20 of 20)" in dog.reason, dog.reason  # 10.5 .. 19.5 s and 20.6 s


def test_a_few_failures_of_a_slow_run_are_not_enough_and_none_disables_it():
    clock, stops = Clock(), []
    slow = Watchdog(10.0, lambda: stops.append("slow"), clock)
    feed(slow, clock, [failed(0.5), failed(6.0), failed(12.0), failed(18.0)])  # 4 failures over 17.5 s
    assert stops == []
    feed(slow, clock, [failed(24.0)])  # the fifth
    assert stops == ["slow"]
    never = Watchdog(None, lambda: stops.append("never"), clock)
    feed(never, clock, [failed(0.1 * i) for i in range(1, 400)])
    assert stops == ["slow"] and never.reason is None


def test_the_latest_failure_names_the_reason_whatever_its_kind():
    clock, stops = Clock(), []
    dog = Watchdog(2.0, lambda: stops.append(1), clock)
    timeout = Record("c", "m", 0, 0, 0.0, 0.0, 2.5, Outcome.TIMEOUT, "client_timeout", 1, False,
                     "no response within 2.5 s")
    feed(dog, clock, [failed(0.1), failed(0.2), failed(0.3), failed(0.4), timeout])
    assert stops == [1] and dog.reason.endswith(": no response within 2.5 s"), dog.reason


def test_the_spec_field_round_trips_and_refuses_a_span_that_is_not_positive():
    assert LoadSpec().stop_when_all_fail_s == 10.0
    for value in (None, 2.5):
        spec = LoadSpec(stop_when_all_fail_s=value)
        assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec
    assert spec_from_dict({"stop_when_all_fail_s": "3"}).stop_when_all_fail_s == 3.0  # YAML or the command line
    with pytest.raises(ValueError, match="stop_when_all_fail_s must be positive seconds, or null"):
        LoadSpec(stop_when_all_fail_s=0)
