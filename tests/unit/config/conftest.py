"""Fixtures of the config unit tests: the shipped repository's caps, a private history store."""
from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigHistory, ServerCaps
from app.paths import MODEL_REPOSITORY


@pytest.fixture
def caps() -> ServerCaps:
    """Caps of the shipped repository on a server without GPUs."""
    return ServerCaps.of_repository(MODEL_REPOSITORY, gpu_count=0)


@pytest.fixture
def history(tmp_path: Path) -> ConfigHistory:
    """A history store private to the test."""
    return ConfigHistory(tmp_path / "history")
