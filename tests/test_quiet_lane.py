"""The quiet lane while the first pass runs: two quiet tests at once, or one alone, first come first served, or one
that waits for its end; at once after it (threads stand for the quiet workers: each opens the lock file itself, so
flock holds between them as between processes).
"""
from __future__ import annotations

import os
import threading
import time

from tests.quiet_lane import AFTER, ALONE, SHARED, in_the_quiet_lane


class Lane:
    """Workers each running `tests` bodies of `body_s` under the lane (alone, or shared where `shared` names the
    worker); records who ran when, how many at once, and whether a test that runs alone ever had company."""

    def __init__(self, flag, tests: int = 4, body_s: float = 0.15, shared: frozenset[str] = frozenset(),
                 after: frozenset[str] = frozenset()):
        self.flag, self.tests, self.body_s, self.shared, self.after = flag, tests, body_s, shared, after
        self.inside: set[str] = set()
        self.most_at_once = 0
        self.alone_with_company = 0
        self.order: list[str] = []
        self.lock = threading.Lock()

    def worker(self, name: str, tests: int | None = None) -> None:
        kind = SHARED if name in self.shared else AFTER if name in self.after else ALONE
        for _ in range(self.tests if tests is None else tests):
            with in_the_quiet_lane(str(self.flag) if self.flag else None, kind, name):
                with self.lock:
                    self.inside.add(name)
                    self.most_at_once = max(self.most_at_once, len(self.inside))
                    self.order.append(name)
                    self.alone_with_company += any(n not in self.shared for n in self.inside) and len(self.inside) > 1
                time.sleep(self.body_s)
                with self.lock:
                    self.inside.discard(name)

    def run(self, *names: str) -> float:
        started = time.perf_counter()
        threads = [threading.Thread(target=self.worker, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        return time.perf_counter() - started


def test_while_the_first_pass_runs_a_test_that_needs_it_alone_runs_alone_in_turns(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag)
    lane.run("gw0", "gw1")
    assert lane.most_at_once == 1, lane.order
    # in turns: neither worker runs all its tests before the other's first (taken greedily, the one that just let go
    # wins the race for the lock again and the other waits for the end of the first pass): first come, first served
    assert sorted(lane.order) == ["gw0"] * 4 + ["gw1"] * 4, lane.order
    assert all(a != b for a, b in zip(lane.order, lane.order[1:])), lane.order


def test_once_the_first_pass_ends_they_run_at_once_and_a_waiting_one_goes_on(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag, tests=1, body_s=1.5)
    ended = threading.Timer(0.5, flag.unlink)  # the first pass ends while gw1 waits for gw0's test
    ended.start()
    lane.run("gw0", "gw1")
    ended.join()
    assert lane.most_at_once == 2, lane.order  # gw1 went on inside gw0's test, not after it
    assert not list(tmp_path.glob("running.waiting.*")), list(tmp_path.iterdir())


def test_without_a_first_pass_there_is_no_lane(tmp_path):
    lane = Lane(None, tests=1, body_s=0.5)
    lane.run("gw0", "gw1")
    assert lane.most_at_once == 2 and not list(tmp_path.iterdir())


def test_a_worker_that_stopped_waiting_is_not_let_go_first(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    stale = tmp_path / "running.waiting.gone"
    stale.touch()
    past = time.time() - 60
    os.utime(stale, (past, past))
    lane = Lane(flag, tests=3, body_s=0.05)
    took = lane.run("gw0")
    assert lane.order == ["gw0"] * 3 and took < 2.0, (lane.order, took)


def test_while_the_first_pass_runs_two_shared_tests_run_at_once(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag, tests=3, body_s=0.6, shared=frozenset({"gw0", "gw1"}))
    took = lane.run("gw0", "gw1")
    assert lane.most_at_once == 2, lane.order
    assert took < 3 * 0.6 * 2, took  # side by side: one after the other would take 3.6 s


def test_a_test_that_needs_the_lane_alone_is_not_passed_over_by_its_neighbours_next_shared_test(tmp_path):
    """gw0 runs shared tests back to back; gw1, once its own shared test ends, wants the lane alone: it gets it when
    gw0's test in progress ends (taken greedily, gw0's next shared test would come first every time), and no shared
    test runs beside it."""
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag, tests=6, body_s=0.3, shared=frozenset({"gw0"}))
    threads = [threading.Thread(target=lane.worker, args=("gw0",)),
               threading.Thread(target=lane.worker, args=("gw1", 2))]
    threads[0].start()
    deadline = time.monotonic() + 30
    while not lane.order and time.monotonic() < deadline:  # gw0 inside its first test before gw1 asks
        time.sleep(0.01)
    threads[1].start()
    for t in threads:
        t.join(60)
    assert lane.alone_with_company == 0, lane.order
    assert lane.order.count("gw1") == 2 and lane.order.count("gw0") == 6, lane.order
    # between gw1's two tests at most one of gw0's (the one in progress when gw1 began to wait)
    first, second = (i for i, n in enumerate(lane.order) if n == "gw1")
    assert first <= 2 and second - first <= 2, lane.order  # greedily: 6 and 7


def test_a_third_worker_waits_while_two_shared_tests_run(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag, tests=3, body_s=0.4, shared=frozenset({"gw0", "gw1", "gw2"}))
    lane.run("gw0", "gw1", "gw2")
    assert lane.most_at_once == 2 and sorted(lane.order) == ["gw0"] * 3 + ["gw1"] * 3 + ["gw2"] * 3, lane.order


def test_a_test_that_waits_for_the_end_of_the_first_pass_starts_after_it_and_holds_no_one_back(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag, tests=1, body_s=0.2, after=frozenset({"gw0"}))
    ended = threading.Timer(1.5, flag.unlink)
    ended.start()
    started = time.monotonic()
    first = threading.Thread(target=lane.worker, args=("gw0",))
    first.start()
    time.sleep(0.3)  # gw0 waits for the end; gw1's tests come after it and go on at once
    lane.worker("gw1", 3)
    gw1_done = time.monotonic() - started
    first.join(10)
    ended.join()
    assert lane.order == ["gw1"] * 3 + ["gw0"], lane.order
    assert gw1_done < 1.5, gw1_done  # not held back by a worker waiting for the end
