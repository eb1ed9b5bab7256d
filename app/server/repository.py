"""What a model repository folder holds."""
from __future__ import annotations

import re
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ModelNameError(ValueError):
    """A model name is malformed or not in the repository."""


def model_names(repo: Path) -> list[str]:
    """Return the models (folders with a config.pbtxt) in a repository, sorted."""
    return sorted(p.parent.name for p in Path(repo).glob("*/config.pbtxt") if _NAME.match(p.parent.name))


def model_dir(repo: Path, name: str) -> Path:
    """Return the folder of a model, refusing names that are paths or not in the repository."""
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise ModelNameError(f"model name {name!r} is not valid: use letters, digits, '_', '.', '-' and no '/'")
    path = Path(repo).resolve() / name
    if not (path / "config.pbtxt").is_file():
        raise ModelNameError(f"model {name!r} is not in the repository {repo}")
    return path
