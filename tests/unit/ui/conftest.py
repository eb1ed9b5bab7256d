"""The pages' tests: every page drawn and clicked through AppTest on the FakeLab (`on_fake`, tests/unit/conftest.py)."""
from __future__ import annotations

import pytest

from tests.unit.ui import apptest  # noqa: F401 - every AppTest of the process shares one component scan


@pytest.fixture
def choice():
    """The presenter's choice (the process's), back to following the lab after the test."""
    from app.ui.demo import presenter  # noqa: PLC0415

    presenter.choose(presenter.AUTO)
    yield presenter
    presenter.choose(presenter.AUTO)


@pytest.fixture
def install(on_fake):
    """install(lab): make another FakeLab the process's one Lab for the rest of the test (closed after it)."""
    from app.lab import owner  # noqa: PLC0415

    def install(lab):
        owner.replace(lambda: lab)  # closes the one before
        return lab

    return install  # on_fake's teardown closes whichever is installed then


@pytest.fixture
def on_third_party(install, tmp_path):
    """A FakeLab on a copy of a repository the lab did not write (tests/third_party_repository), installed."""
    from tests.fakes.fake_lab import FakeLab  # noqa: PLC0415
    from tests.third_party import SOURCE  # noqa: PLC0415

    return install(FakeLab(tmp_path / "third-party", repo=SOURCE))
