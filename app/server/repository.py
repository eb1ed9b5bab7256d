"""What a model repository folder holds: Triton's rule for what a model is."""
from __future__ import annotations

import re
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ModelNameError(ValueError):
    """A model name is malformed or not in the repository."""


def is_model_folder(path: Path) -> bool:
    """Return True for a folder Triton serves as a model: a config.pbtxt, or a numeric version subfolder (the config
    is then auto-completed by the backend)."""
    if not path.is_dir() or not _NAME.match(path.name):
        return False
    if (path / "config.pbtxt").is_file():
        return True
    return any(child.is_dir() and child.name.isdigit() for child in path.iterdir())


def model_names(repo: Path) -> list[str]:
    """Return the models of a repository (folders with a config.pbtxt or a numeric version folder), sorted."""
    repo = Path(repo)
    if not repo.is_dir():
        return []
    return sorted(p.name for p in repo.iterdir() if is_model_folder(p))


def model_dir(repo: Path, name: str) -> Path:
    """Return the folder of a model, refusing names that are paths or not in the repository."""
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise ModelNameError(f"model name {name!r} is not valid: use letters, digits, '_', '.', '-' and no '/'")
    path = Path(repo).resolve() / name
    if not is_model_folder(path):
        raise ModelNameError(f"model {name!r} is not in the repository {repo}")
    return path
