"""xdist's `--dist loadgroup` keeps a group's tests on one worker, with the groups added as tests/conftest.py adds them.

The first pass leans on it: a module's lab, dashboard or browser started once, a Chromium lane of its own, the Docker
tests in turn. pytest 9.2 made the group silently not count (pytest-xdist #1386: it renames a test by `_nodeid`, which
9.2's structured node ids no longer read): every test its own unit, spread over the workers, nothing failing. Every
run of the suite until 2026-12-04 ran that way. requirements-test.in keeps pytest below 9.2 until xdist reads groups
another way; this test fails on a pair that loses them again."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from textwrap import dedent

CONFTEST = '''
import pytest

@pytest.hookimpl(tryfirst=True)  # as tests/conftest.py: before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.name.startswith("test_added"):
            item.add_marker(pytest.mark.xdist_group("added"))
'''

TESTS = '''
import pytest

@pytest.mark.parametrize("i", range(6))
def test_added(i):
    pass

@pytest.mark.xdist_group("marked")
@pytest.mark.parametrize("i", range(6))
def test_marked(i):
    pass

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
'''


def test_a_groups_tests_run_on_one_worker_whether_marked_in_code_or_added_at_collection(tmp_path):
    (tmp_path / "conftest.py").write_text(dedent(CONFTEST))
    (tmp_path / "test_grouped.py").write_text(dedent(TESTS))
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                          "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, name in re.findall(r"\[(gw\d)\].*PASSED \S*::(test_\w+)\[", run.stdout):
        workers[name].add(worker)
    assert set(workers) == {"test_added", "test_marked", "test_free"}, run.stdout[-3000:]
    assert len(workers["test_added"]) == 1 and len(workers["test_marked"]) == 1, (dict(workers), run.stdout[-3000:])
