"""The first pass's browser priority (tests/conftest.py): what a browser module starts is found at any depth and
held ahead of the other workers even when it sets its own priority, as Chromium does for its renderers."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import NiceKeeper
from tests.helpers import descendants, wait_until

# a child that starts a grandchild, then sets its own and its grandchild's priority back to 5 (as Chromium does)
TREE = ("import os, subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        "print(g.pid, flush=True); time.sleep(0.3); os.setpriority(os.PRIO_PROCESS, 0, 5);"
        "os.setpriority(os.PRIO_PROCESS, g.pid, 5); time.sleep(60)")


@pytest.fixture
def tree():
    child = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    yield child.pid, grandchild
    for pid in (grandchild, child.pid):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    child.wait(10)


def test_descendants_finds_children_and_grandchildren_and_nothing_else(tree):
    child, grandchild = tree
    found = [p.pid for p in descendants(os.getpid())]
    assert child in found and grandchild in found, (tree, found)
    assert descendants(grandchild) == [], descendants(grandchild)
    assert os.getppid() not in found and os.getpid() not in found


@pytest.mark.skipif(os.geteuid() != 0, reason="raising a priority needs root (CI has it)")
def test_the_keeper_holds_a_tree_ahead_even_after_it_lowers_itself(tree):
    child, grandchild = tree
    wait_until(lambda: os.getpriority(os.PRIO_PROCESS, grandchild) == 5, 30, "the tree to lower itself to nice 5")
    keeper = NiceKeeper(os.getpid(), -3, every_s=0.1)
    try:
        wait_until(lambda: all(os.getpriority(os.PRIO_PROCESS, p) == -3 for p in tree), 30,
                   f"both at nice -3 (now {[os.getpriority(os.PRIO_PROCESS, p) for p in tree]})")
    finally:
        keeper.close()
    assert keeper.raised >= 2, keeper.raised
    os.setpriority(os.PRIO_PROCESS, grandchild, -8)  # already ahead: left alone
    keeper = NiceKeeper(os.getpid(), -3, every_s=0.1)
    wait_until(lambda: keeper.rounds >= 3, 30, "three of the keeper's rounds")
    keeper.close()
    assert os.getpriority(os.PRIO_PROCESS, grandchild) == -8
