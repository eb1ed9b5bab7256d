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


_PYTHON_BACKEND = re.compile(r'^\s*backend\s*:\s*"python"\s*$', re.MULTILINE)
_PLATFORM = re.compile(r"^\s*platform\s*:", re.MULTILINE)


def completes_nothing(repo: Path, bundled: Path) -> bool:
    """Return True when Triton's auto-complete would change no config of the repository: every model is one of the
    lab's own as bundled in `bundled` — a config.pbtxt naming the Python backend beside version folders whose files
    are byte for byte the bundled model's (whose code defines no auto_complete_config: tests/contract/server/test_embedded.py).

    The Python backend's auto-complete only calls a model's TritonPythonModel.auto_complete_config, and only where it
    is defined (python_backend src/pb_stub.cc); to do so it starts one more stub at every load and sleeps 1 s before
    ending it, so a reload of a lab model took 1.37 s with it and 0.11 s without (2026-12-04). A user's model, a
    changed model.py, another backend or a model without config.pbtxt keeps auto-complete on."""
    names = model_names(repo)
    return bool(names) and set(names) <= set(model_names(bundled)) and all(
        _as_bundled(Path(repo) / name, Path(bundled) / name) for name in names)


def _as_bundled(model: Path, original: Path) -> bool:
    config = model / "config.pbtxt"
    if not config.is_file():
        return False
    text = config.read_text(errors="replace")
    if not _PYTHON_BACKEND.search(text) or _PLATFORM.search(text):
        return False
    files, theirs = _version_files(model), _version_files(original)
    return files.keys() == theirs.keys() and all(files[k].read_bytes() == theirs[k].read_bytes() for k in files)


def _version_files(model: Path) -> dict[str, Path]:
    """Return the files of a model's version folders by relative path (no byte code)."""
    return {str(f.relative_to(model)): f for version in model.iterdir() if version.is_dir() and version.name.isdigit()
            for f in version.rglob("*") if f.is_file() and "__pycache__" not in f.parts}
