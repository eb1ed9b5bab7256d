"""The quiet lane: one quiet test at a time, in turns, while the first pass runs; at once after it (two threads stand
for the two quiet workers: each opens the lock file itself, so flock holds between them as between processes)."""
from __future__ import annotations

import os
import threading
import time

from tests.quiet_lane import after_the_first_pass, alone_while_the_first_pass_runs


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


def test_a_tail_test_waits_for_the_first_pass_to_end_and_needs_no_lock(tmp_path):
    flag = tmp_path / "running"
    flag.touch()
    ended = threading.Timer(0.6, flag.unlink)
    started = time.perf_counter()
    ended.start()
    # another quiet test holds the lane meanwhile: the tail test needs none
    with alone_while_the_first_pass_runs(str(flag), "gw0"), after_the_first_pass(str(flag)):
        waited = time.perf_counter() - started
    ended.join()
    assert waited >= 0.6 and not flag.exists(), waited
    with after_the_first_pass(None):  # no first pass beside it: at once
        pass


def test_the_tail_is_handed_out_last_longest_first_and_marked_to_wait():
    """The quiet pass's order (tests/conftest.py TAIL): every other quiet test first, as collected; then `patterns`
    (the longest), `queue-delay`, ..., the other scenarios last; only the TAIL waits for the first pass."""
    from tests.conftest import TAIL, _tail_rank  # noqa: PLC0415

    claim = "tests/scenarios/test_scenarios.py::test_the_scenario_reproduces_its_claim"
    ids = [f"{claim}[mixed-traffic]", "tests/models/test_gpu_sim.py::test_dynamic_batching_multiplies_throughput",
           f"{claim}[queue-delay]", f"{claim}[patterns]",
           "tests/ui/test_experiments_page.py::test_a_concept_page_runs_its_scenario_and_shows_the_verdict",
           "tests/experiments/test_ab.py::test_two_identical_configs_give_no_clear_difference"]
    assert sorted(ids, key=_tail_rank) == [ids[1], ids[5], f"{claim}[patterns]", f"{claim}[queue-delay]", ids[4],
                                           f"{claim}[mixed-traffic]"]
    assert all(_tail_rank(prefix) == rank for rank, prefix in enumerate(TAIL))  # each entry names a test first


def _collected(mark: str, modules: list[str]) -> list[str]:
    """Return the ids `pytest --collect-only -m mark` lists for modules, in the order tests/conftest.py gives."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m",
                          mark, *modules], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_the_quiet_pass_collects_the_tail_last_and_only_it_marked_to_wait():
    modules = ["tests/models/test_gpu_sim.py", "tests/scenarios/test_scenarios.py", "tests/ui/test_experiments_page.py"]
    quiet, tail = _collected("quiet", modules), _collected("after_first_pass", modules)
    print("\n".join(quiet))
    assert len(tail) == 11 and quiet[-len(tail):] == tail, (quiet, tail)  # 8 claims, the CLI's, the page's two
    assert tail[0].endswith("[patterns]") and tail[1].endswith("[queue-delay]"), tail
    assert not any("test_gpu_sim" in t for t in tail) and any("test_gpu_sim" in t for t in quiet), quiet


def test_the_first_pass_hands_out_its_live_tests_before_the_unit_tests():
    """tests/conftest.py's order: a module of unit tests named first still comes after a live one (here a page
    test that ended the first pass alone for 35 s when it was handed out last)."""
    modules = ["tests/config/test_text_edit.py", "tests/ui/test_failing_page.py"]
    live, unit = _collected("not quiet and live", modules), _collected("not quiet and not live", modules)
    assert live and unit, (live, unit)
    first_pass = _collected("not quiet", modules)
    assert first_pass == live + unit, first_pass
