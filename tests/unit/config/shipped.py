"""The lab's shipped configs, read from model_repository/: what the config tests edit and validate."""
from __future__ import annotations

from pathlib import Path

from app.config import read_config
from app.paths import MODEL_REPOSITORY

SHIPPED = sorted([*MODEL_REPOSITORY.glob("*/config.pbtxt"), *MODEL_REPOSITORY.glob("*/configs/*.pbtxt")])
THIRD_PARTY = Path(__file__).resolve().parents[2] / "third_party_repository"


def shipped_id(path: Path) -> str:
    """Name a shipped config by its path inside the repository."""
    return str(path.relative_to(MODEL_REPOSITORY))


def pristine(model: str):
    """Return the shipped config of a model."""
    return read_config(MODEL_REPOSITORY / model / "config.pbtxt")
