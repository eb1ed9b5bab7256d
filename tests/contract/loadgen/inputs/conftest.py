"""The inputs' tests drive the third-party models' server."""
from __future__ import annotations

import pytest


@pytest.fixture
def url(third_party) -> str:
    """The HTTP address of the third-party models' server (tests/contract/loadgen/conftest.py)."""
    return third_party.http_url
