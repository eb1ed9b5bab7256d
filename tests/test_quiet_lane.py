"""The quiet lane: one quiet test at a time, in turns, while the first pass runs; at once after it (two threads stand
for the two quiet workers: each opens the lock file itself, so flock holds between them as between processes)."""
from __future__ import annotations

import os
import threading
import time

from tests.quiet_lane import alone_while_the_first_pass_runs


class Lane:
    """Two workers each running `tests` bodies of `body_s` under the lane; records who ran when."""

    def __init__(self, flag, tests: int = 4, body_s: float = 0.15):
        self.flag, self.tests, self.body_s = flag, tests, body_s
        self.inside: set[str] = set()
        self.most_at_once = 0
        self.order: list[str] = []
        self.lock = threading.Lock()

    def worker(self, name: str) -> None:
        for _ in range(self.tests):
            with alone_while_the_first_pass_runs(str(self.flag) if self.flag else None, name):
                with self.lock:
                    self.inside.add(name)
                    self.most_at_once = max(self.most_at_once, len(self.inside))
                    self.order.append(name)
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


def test_while_the_first_pass_runs_one_test_at_a_time_in_turns(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    lane = Lane(flag)
    lane.run("gw0", "gw1")
    assert lane.most_at_once == 1, lane.order
    # in turns: neither worker runs all its tests before the other's first (taken greedily, the one that just let go
    # wins the race for the lock again and the other waits for the end of the first pass)
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
