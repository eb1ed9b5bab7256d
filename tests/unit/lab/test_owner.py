"""The process's one Lab (pure: stand-in labs that log what happens to them)."""
from __future__ import annotations

import sys
import threading

import pytest

from app.lab.owner import LabOwner
from app.server.start_errors import ServerStartError
from tests.helpers import wait_until


class StandIn:
    """Stands in for a Lab: records its close in the shared log."""

    def __init__(self, n: int, log: list[str], fail_close: bool = False) -> None:
        self.n, self.log, self.fail_close = n, log, fail_close

    def close(self) -> None:
        self.log.append(f"close {self.n}")
        if self.fail_close:
            raise RuntimeError(f"lab {self.n} could not stop its server")


class Factory:
    """Builds numbered stand-ins, logging each build."""

    def __init__(self, log: list[str] | None = None, fail_close: bool = False) -> None:
        self.log = [] if log is None else log
        self.fail_close = fail_close
        self.built = 0

    def __call__(self) -> StandIn:
        self.built += 1
        self.log.append(f"build {self.built}")
        return StandIn(self.built, self.log, self.fail_close)


def test_every_get_returns_the_one_lab_built_on_first_use():
    owner, factory = LabOwner(), Factory()
    assert owner.current() is None and factory.built == 0  # nothing starts before someone asks
    first = owner.get(factory)
    assert [owner.get(factory) for _ in range(5)] == [first] * 5
    assert owner.current() is first and factory.log == ["build 1"]


def _stack_names(thread: threading.Thread) -> set[str]:
    frame = sys._current_frames().get(thread.ident)  # noqa: SLF001 - where each thread is waiting now
    names = set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return names


def test_concurrent_gets_from_threads_build_one_lab():
    owner, release, log = LabOwner(), threading.Event(), []
    factory = Factory(log)

    def slow_factory() -> StandIn:
        lab = factory()
        assert release.wait(30), "the test never released the factory"
        return lab

    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(owner.get(slow_factory))) for _ in range(8)]
    for t in threads:
        t.start()
    # every thread is inside get() (one building, the others waiting) before the first build may finish
    wait_until(lambda: all("get" in _stack_names(t) for t in threads), 30, "all eight threads inside get()")
    release.set()
    for t in threads:
        t.join(30)
    assert factory.built == 1, f"{factory.built} labs built by 8 concurrent gets: {log}"
    assert len(results) == 8 and all(r is results[0] for r in results) and owner.current() is results[0]


def test_a_lab_that_could_not_start_is_not_kept_and_the_next_get_tries_again():
    owner, factory = LabOwner(), Factory()
    attempts = []

    def flaky() -> StandIn:
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            raise ServerStartError("tritonserver exited with status 1 before it answered")
        return factory()

    with pytest.raises(ServerStartError, match="exited with status 1"):
        owner.get(flaky)
    assert owner.current() is None
    lab = owner.get(flaky)  # the page's "Try again"
    assert attempts == [1, 2] and owner.current() is lab and lab.n == 1


def test_replace_closes_the_old_lab_before_the_new_one_is_built():
    owner, factory = LabOwner(), Factory()
    old = owner.get(factory)
    new = owner.replace(factory)
    assert factory.log == ["build 1", "close 1", "build 2"], factory.log
    assert new is not old and owner.current() is new and owner.get(factory) is new


def test_close_closes_and_forgets_the_lab_and_the_next_get_builds_a_new_one():
    owner, factory = LabOwner(), Factory()
    owner.close()  # none yet: nothing to close
    first = owner.get(factory)
    owner.close()
    assert owner.current() is None and factory.log == ["build 1", "close 1"]
    assert owner.get(factory) is not first and factory.log == ["build 1", "close 1", "build 2"]


def test_a_lab_whose_close_fails_stays_owned_and_no_second_one_is_built():
    owner, factory = LabOwner(), Factory(fail_close=True)
    lab = owner.get(factory)
    with pytest.raises(RuntimeError, match="could not stop its server"):
        owner.replace(factory)
    with pytest.raises(RuntimeError, match="could not stop its server"):
        owner.close()
    assert owner.current() is lab and owner.get(factory) is lab
    assert factory.log == ["build 1", "close 1", "close 1"], factory.log  # each close tried again, nothing built


def test_the_module_owner_is_the_process_wide_one(monkeypatch):
    import app.lab.owner as lab_owner  # noqa: PLC0415

    owner, factory = LabOwner(), Factory()
    monkeypatch.setattr(lab_owner, "_owner", owner)
    lab = lab_owner.get(factory)
    assert lab_owner.current() is lab and lab_owner.get(factory) is lab
    assert lab_owner.replace(factory) is owner.current() and factory.log == ["build 1", "close 1", "build 2"]
    lab_owner.close()
    assert lab_owner.current() is None and factory.log[-1] == "close 2"
