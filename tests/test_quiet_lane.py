"""The quiet lane: one quiet test at a time, in turns, while the first pass runs; at once after it (two threads stand
for the two quiet workers: each opens the lock file itself, so flock holds between them as between processes)."""
from __future__ import annotations

import os
import threading
import time

import pytest

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


def test_the_tail_is_handed_out_last_lane_by_lane_and_marked_to_wait():
    """The quiet pass's order (tests/conftest.py TAIL): every other quiet test first, as collected; then the lanes'
    tests lane by lane (`patterns`' lane last); only the TAIL waits for the first pass."""
    from tests.conftest import TAIL, TAIL_LANES, _tail_lane, _tail_rank  # noqa: PLC0415

    claim = "tests/scenarios/test_scenarios.py::test_the_scenario_reproduces_its_claim"
    page = "tests/ui/test_experiments_page.py::test_a_concept_page_runs_its_scenario_and_shows_the_verdict"
    ids = [f"{claim}[mixed-traffic]", "tests/models/test_gpu_sim.py::test_dynamic_batching_multiplies_throughput",
           f"{claim}[queue-delay]", f"{claim}[patterns]", page, f"{claim}[a-new-one]",
           "tests/experiments/test_ab.py::test_two_identical_configs_give_no_clear_difference"]
    assert sorted(ids, key=_tail_rank) == [ids[1], ids[6], f"{claim}[queue-delay]", f"{claim}[mixed-traffic]",
                                           f"{claim}[patterns]", page, f"{claim}[a-new-one]"]
    assert all(_tail_rank(prefix) == rank for rank, prefix in enumerate(TAIL))  # each entry names a test first
    assert [_tail_lane(i) for i in ids] == [None if i is None else f"tail-{i}" for i in (1, None, 1, 4, 4, None,
                                                                                         None)]
    # three or more a lane, but the last: a lane of two tops its worker up with the next unit (xdist's loadgroup
    # assigns more at two pending), which only the last lane has none of
    lanes = list(TAIL_LANES.values())
    assert all(len(lane) >= 3 for lane in lanes[:-1]) and len(lanes[-1]) >= 1, TAIL_LANES


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
    assert tail[0].endswith("[queue-delay]") and tail[-2].endswith("[patterns]"), tail
    assert not any("test_gpu_sim" in t for t in tail) and any("test_gpu_sim" in t for t in quiet), quiet


GROUPS_PLUGIN = """
def pytest_collection_finish(session):
    for item in session.items:
        group = item.get_closest_marker("xdist_group")
        print("UNIT", item.nodeid + (f"@{group.args[0]}" if group else ""), flush=True)
"""


class _Config:
    """What xdist's scheduler reads of a pytest config: the workers and the reorder option."""

    def __init__(self, workers: int, reorder: bool):
        self.option = type("Option", (), {"loadscopereorder": reorder})()
        self.workers = workers

    def getvalue(self, name: str):
        assert name == "tx", name
        return [f"{self.workers}*popen"]


class _Worker:
    def __init__(self, name: str):
        self.name, self.shutting_down, self.queue = name, False, []
        self.gateway = type("Gateway", (), {"id": name})()  # named when collections differ

    def send_runtest_some(self, indexes):
        self.queue.extend(indexes)

    def shutdown(self):
        self.shutting_down = True


def _quiet_pass_options() -> list[str]:
    """Return scripts/lab.sh's QUIET_PASS options, as it passes them to the quiet pass."""
    import re  # noqa: PLC0415
    import shlex  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    line = re.search(r"^QUIET_PASS=\((.*)\)$", (Path(__file__).parent.parent / "scripts/lab.sh").read_text(), re.M)
    assert line, "scripts/lab.sh defines no QUIET_PASS=(...)"
    return shlex.split(line.group(1))


def _hand_out(units: list[str], workers: int, reorder: bool, first_pass_s: float):
    """Run xdist's own loadgroup scheduler over `units` (ids with their @group) with fake workers that take the quiet
    lane's turns: every test lasts 1 s; while the first pass runs (first_pass_s), a test not in a tail lane runs only
    when no other does and a tail lane's waits. Return each worker's tests as it ran them and what each held at the
    first pass's end, and when the last test not in a lane ended."""
    from xdist.scheduler import LoadGroupScheduling  # noqa: PLC0415

    sched = LoadGroupScheduling(_Config(workers, reorder))
    nodes = [_Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, units)
    sched.schedule()
    ran = {node.name: [] for node in nodes}
    held_at_end: dict[str, list[str]] = {}
    busy: dict[str, tuple[float, int]] = {}  # worker -> (ends at, index)
    now = others_done = 0.0
    while any(node.queue for node in nodes) or busy:
        if now >= first_pass_s and not held_at_end:
            held_at_end = {n.name: [units[i] for i in n.queue] + ([units[busy[n.name][1]]] if n.name in busy else [])
                           for n in nodes}
        for node in nodes:
            if node.name in busy or not node.queue:
                continue
            tail = "@tail-" in units[node.queue[0]]
            if now < first_pass_s and (tail or busy):  # the lane: one at a time; the tail after the first pass
                continue
            busy[node.name] = (now + 1.0, node.queue.pop(0))
        ends = [end for end, _ in busy.values()] + ([first_pass_s] if now < first_pass_s else [])
        assert ends, "every worker waits for nothing"
        now = min(ends)
        for node in nodes:
            if node.name in busy and busy[node.name][0] <= now:
                _, index = busy.pop(node.name)
                ran[node.name].append(units[index])
                others_done = others_done if "@tail-" in units[index] else now
                sched.mark_test_complete(node, index)
    return ran, held_at_end, others_done


def _lanes_of(tests: list[str]) -> set[str]:
    return {t.rsplit("@", 1)[1] for t in tests if "@tail-" in t}


def test_each_quiet_worker_holds_one_tail_lane_when_the_first_pass_ends(tmp_path):
    """xdist's own scheduler over the quiet pass's real collection, with scripts/lab.sh's options and four workers:
    when the first pass ends each worker holds one lane, whatever the first pass's length, and runs no other's."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from tests.conftest import TAIL_LANES  # noqa: PLC0415

    (tmp_path / "print_units.py").write_text(GROUPS_PLUGIN)
    options = _quiet_pass_options()
    assert options[:2] == ["--dist", "loadgroup"] and "-m" in options, options
    mark = options[options.index("-m") + 1]
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                          "print_units", "-m", mark], capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    units = [line.split(" ", 1)[1] for line in run.stdout.splitlines() if line.startswith("UNIT ")]
    assert _lanes_of(units) == set(TAIL_LANES), units
    others = sum("@tail-" not in u for u in units)
    for first_pass_s in (others / 2, others + 5.0, others * 3.0):  # it ends before the others are done, or after
        ran, held, others_done = _hand_out(units, 4, "--no-loadscope-reorder" not in options, first_pass_s)
        lanes = {worker: _lanes_of(tests) for worker, tests in ran.items()}
        assert sorted(len(v) for v in lanes.values()) == [1, 1, 1, 1], (first_pass_s, lanes)
        # the lane never idles while the others wait: they end one after the other, at once after the first pass
        assert others_done == (others if first_pass_s > others else pytest.approx(first_pass_s, abs=others / 4 + 1)), (
            first_pass_s, others_done, others)
        if first_pass_s > others:
            assert sorted(len(_lanes_of(v)) for v in held.values()) == [1, 1, 1, 1], (first_pass_s, held)
    # xdist's default order (largest group first) hands the lanes out first: four workers wait on them, and the
    # other quiet tests wait until the first pass has ended
    _, _, others_done = _hand_out(units, 4, True, others + 5.0)
    assert others_done > others + 5.0, (others_done, others)


def test_the_first_pass_hands_out_its_live_tests_before_the_unit_tests():
    """tests/conftest.py's order: a module of unit tests named first still comes after a live one (here a page
    test that ended the first pass alone for 35 s when it was handed out last)."""
    modules = ["tests/config/test_text_edit.py", "tests/ui/test_failing_page.py"]
    live, unit = _collected("not quiet and live", modules), _collected("not quiet and not live", modules)
    assert live and unit, (live, unit)
    first_pass = _collected("not quiet", modules)
    assert first_pass == live + unit, first_pass
