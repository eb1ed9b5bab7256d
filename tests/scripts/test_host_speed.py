"""scripts/host_speed.py: the second pass's worker count follows how quickly both cores count."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "host_speed.py"
spec = importlib.util.spec_from_file_location("host_speed", SCRIPT)
host_speed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_speed)


def test_a_quick_host_runs_two_quiet_tests_at_once_four_after_a_first_pass_beside_them_and_a_slow_one_runs_one():
    # measured: 0.17-0.19 s on our quick hosts, 0.25-0.30 s under a 1.1-CPU quota (2026-12-02)
    assert [host_speed.quiet_workers(s) for s in (0.17, 0.19, 0.24)] == [2, 2, 2]
    assert [host_speed.quiet_workers(s) for s in (0.25, 0.30, 1.0)] == [1, 1, 1]
    assert [host_speed.quiet_workers(s, at_once=True) for s in (0.12, 0.24, 0.25, 1.0)] == [4, 4, 1, 1]


def test_on_a_host_found_idle_a_moments_neighbour_does_not_make_it_slow_and_beside_work_the_median_decides():
    # a try slowed by a daemon starting beside an idle host (0.26 s among 0.17 s), a 1.1-CPU quota's every try,
    # and beside stress-ng --cpu 1 (--busy: busy, so no --at-once) a quick try among slow ones
    assert host_speed.quiet_workers(host_speed.pace([0.17, 0.26, 0.26, 0.17, 0.18], at_once=True), at_once=True) == 4
    assert host_speed.quiet_workers(host_speed.pace([0.27, 0.25, 0.30, 0.28, 0.26], at_once=True), at_once=True) == 1
    assert host_speed.quiet_workers(host_speed.pace([0.22, 0.26, 0.29])) == 1
    assert host_speed.pace([0.17, 0.26, 0.26, 0.17, 0.18]) == 0.18


def test_the_script_prints_the_worker_count_for_lab_sh_and_what_it_measured():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    print(done.stdout, done.stderr)
    assert done.returncode == 0 and done.stdout.strip() in ("1", "2"), done
    assert re.match(r"host speed: two loops at once in \d+\.\d\d s", done.stderr), done.stderr
    at_once = subprocess.run([sys.executable, str(SCRIPT), "--at-once"], capture_output=True, text=True, timeout=120)
    print(at_once.stdout, at_once.stderr)
    assert at_once.returncode == 0 and at_once.stdout.strip() in ("1", "4"), at_once
    assert "once the first pass ends" in at_once.stderr, at_once.stderr


def _stat(user: int, idle: int, iowait: int = 0) -> str:
    return f"cpu  {user} 0 0 {idle} {iowait} 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n"


def test_the_busy_share_counts_what_is_not_idle_or_waiting_on_io():
    assert host_speed.busy_share(_stat(100, 100), _stat(150, 150)) == 0.5  # one of two cores busy
    assert host_speed.busy_share(_stat(100, 100), _stat(100, 180, 20)) == 0.0  # waiting on disk is not busy
    assert host_speed.busy_share(_stat(100, 100), _stat(100, 100)) == 0.0


def test_busy_says_idle_on_this_quiet_moment_or_busy_beside_a_spinning_core():
    # the pytest process sits in a wait meanwhile; a spinning child is a core of two busy
    def busy() -> str:
        done = subprocess.run([sys.executable, str(SCRIPT), "--busy"], capture_output=True, text=True, timeout=60)
        print(done.stdout, done.stderr)
        assert done.returncode == 0, done
        return done.stdout.strip()

    assert busy() in ("idle", "busy")  # whatever else of the suite runs now
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert busy() == "busy" or os.cpu_count() > 3  # one core of two spinning is half of them busy
    finally:
        spinner.kill()
        spinner.wait()
