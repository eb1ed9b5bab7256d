"""Where the project keeps its files."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = ROOT / "model_repository"


def state_dir() -> Path:
    """Return the folder for logs, config history and experiments (created on demand)."""
    path = Path(os.environ.get("TBL_STATE_DIR", ROOT / ".lab"))
    path.mkdir(parents=True, exist_ok=True)
    return path
