"""Waiting for a written config to serve, on a scripted server and clock: what counts as a rejection, a timeout, a
failure that beat the first look (tests/contract/config/test_poll.py waits on a real server in poll mode)."""
from __future__ import annotations

import pytest

from app.config.poll import PollRejectedError, PollTimeoutError, Served, wait_until_served


class FakeServer:
    """States in turn, one per look; a clock that each sleep moves on."""

    def __init__(self, *looks: Served) -> None:
        self.looks, self.t = list(looks), 0.0

    def look(self, endpoint, model) -> Served:
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def _wait(server: FakeServer, timeout_s: float = 10.0):
    return wait_until_served(None, "m", lambda c: c is not None and c.max_batch_size == 8, timeout_s,
                             clock=lambda: server.t, sleep=server.sleep, look=server.look, interval_s=1.0)


def test_an_unavailable_model_counts_only_when_its_state_or_reason_changes():
    still = Served(None, "UNAVAILABLE", "old reason")
    server = FakeServer(still, still, still)
    with pytest.raises(PollTimeoutError) as raised:
        _wait(server, 3)
    assert server.t == 3.0 and "UNAVAILABLE: old reason" in str(raised.value)
    server = FakeServer(still, still, Served(None, "UNAVAILABLE", "new reason"))
    with pytest.raises(PollRejectedError, match="new reason"):
        _wait(server)
    assert server.t == 2.0


def test_a_look_taken_before_the_write_catches_a_failure_that_beat_the_first_look():
    server = FakeServer(Served(None, "UNAVAILABLE", "new reason"))
    with pytest.raises(PollRejectedError, match="new reason"):
        wait_until_served(None, "m", lambda c: False, 10, clock=lambda: server.t, sleep=server.sleep,
                          look=server.look, before=Served(None, "UNAVAILABLE", "old reason"))
    assert server.t == 0.0
    log = 'E1 model_lifecycle.cc:642] "failed to load \'m\' version 1: bad thing"'
    with pytest.raises(PollRejectedError, match="bad thing") as raised:
        wait_until_served(None, "m", lambda c: False, 10, clock=lambda: server.t, sleep=server.sleep,
                          look=lambda e, m: Served(None, "READY"), log=lambda: log, seen_log="")
    assert raised.value.reason == "bad thing" and "keeps serving the old config" in str(raised.value)


def test_reads_that_fail_are_waited_through_and_named_at_the_timeout():
    server = FakeServer(Served(None, "UNKNOWN", "", "OSError: HTTP 400: model not found"))
    with pytest.raises(PollTimeoutError, match="last read failed: OSError: HTTP 400"):
        _wait(server, 2)
