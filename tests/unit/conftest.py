"""The unit tier: pure logic, and the pages drawn and clicked through AppTest on a FakeLab (tests/fakes/fake_lab.py):
no server, no process, no network. Fixtures: `fake` (a FakeLab of the lab's models), `on_fake` (that FakeLab as the
process's one Lab, an operator's session: what every page's lab_or_stop() returns)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.fakes.fake_lab import FakeLab


MEMORY = Path("/dev/shm")  # a tmpfs on Linux


@pytest.fixture
def tmp_path(tmp_path_factory) -> Path:
    """A test's own empty folder, in memory where the machine has a tmpfs: the unit tier's stores are SQLite files,
    and on a disk every commit waits for fsync (a FakeLab takes 16 ms to make on /tmp, 5 ms on /dev/shm; measured
    2026-12-06). Removed after the test; elsewhere it is pytest's own tmp_path."""
    if not (MEMORY.is_dir() and os.access(MEMORY, os.W_OK)):
        yield tmp_path_factory.mktemp("test")
        return
    folder = Path(tempfile.mkdtemp(prefix="tbl-unit-", dir=MEMORY))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fake(tmp_path) -> FakeLab:
    """A FakeLab on a copy of the lab's repository, its state in tmp_path."""
    lab = FakeLab(tmp_path / "lab")
    yield lab
    lab.close()


@pytest.fixture
def on_fake(fake, monkeypatch) -> FakeLab:
    """The FakeLab as this process's one Lab, for pages run by AppTest; an operator (no viewer mode, no token)."""
    from app.lab import owner  # noqa: PLC0415

    for name in ("TBL_VIEWER", "TBL_OPERATOR_TOKEN", "TBL_ALLOWED_HOSTS", "TBL_PROMETHEUS_URL", "TBL_LOCUST_URL"):
        monkeypatch.delenv(name, raising=False)
    owner.replace(lambda: fake)
    yield fake
    owner.close()
