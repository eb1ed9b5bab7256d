"""Locate the tritonserver binary shipped in the nvidia-pytriton wheel and prepare its backends."""
from __future__ import annotations

import importlib.metadata
import shlex
import shutil
import sys
from pathlib import Path

from app.server.start_errors import ServerBinaryError

# The wheel's Python backend stub (Triton 2.51) works with numpy 1.x only: under numpy 2 every Python
# model answers "output tensor shape does not match size of output" (measured on Python 3.11 and 3.12).
STUB_NUMPY_MAJOR = 1


def wheel_root() -> Path:
    """Return the folder of the tritonserver that the nvidia-pytriton wheel installed."""
    try:
        import pytriton  # noqa: PLC0415 - optional until the server is needed
    except ImportError as exc:  # pragma: no cover - requirements install it
        raise ServerBinaryError("nvidia-pytriton is not installed: run the Quick start setup") from exc
    root = Path(pytriton.__file__).resolve().parent / "tritonserver"
    if not (root / "bin" / "tritonserver").is_file():
        raise ServerBinaryError(f"no tritonserver binary under {root}")
    return root


def server_binary() -> Path:
    """Return the path of the tritonserver executable."""
    return wheel_root() / "bin" / "tritonserver"


def prepare_backends(target: Path) -> Path:
    """Build a private backends folder whose python backend has the stub for this interpreter.

    ServerBinaryError, before anything starts, when the stub could not serve with this interpreter's numpy.
    """
    problem = numpy_problem(_installed("numpy"))
    if problem:
        raise ServerBinaryError(problem)
    root = wheel_root()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = root / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise ServerBinaryError(f"the wheel has no Python backend stub for Python {version}")
    python_dir = target / "python"
    python_dir.mkdir(parents=True, exist_ok=True)
    for item in (root / "backends" / "python").iterdir():
        if item.is_file():
            _copy_if_changed(item, python_dir / item.name)
    _copy_if_changed(stub, python_dir / stub.name)
    return target


def numpy_problem(version: str | None) -> str | None:
    """Return why the Python backend stub cannot serve with this numpy version (None when it can).

    The stub runs this interpreter's site-packages (this interpreter's folder leads its PATH), so the numpy the
    lab imports is the numpy every Python model gets.
    """
    fix = f'{shlex.quote(sys.executable)} -m pip install "numpy<{STUB_NUMPY_MAJOR + 1}"'
    if version is None:
        return f"numpy is not installed for {sys.executable}; the Python models need it. Install it: {fix}"
    major = version.split(".", 1)[0]
    if not major.isdigit() or int(major) != STUB_NUMPY_MAJOR:
        return (f"numpy {version} is installed for {sys.executable},\n"
                f"but tritonserver 2.51's Python backend stub (nvidia-pytriton wheel) works only with numpy "
                f"{STUB_NUMPY_MAJOR}.x:\nevery request to a Python model would fail with "
                f"\"output tensor shape does not match size of output\".\nThe server was not started. "
                f"Install a {STUB_NUMPY_MAJOR}.x numpy (requirements.txt pins one):\n  {fix}")
    return None


def _installed(package: str) -> str | None:
    """Return the installed version of package by its metadata (what pip installed), without importing it."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_dir() -> Path:
    """Return the wheel's folder of bundled shared libraries (libcudart, libb64, ...)."""
    import pytriton  # noqa: PLC0415

    return Path(pytriton.__file__).resolve().parent.parent / "nvidia_pytriton.libs"


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.exists() and dst.stat().st_size == src.stat().st_size and dst.stat().st_mtime >= src.stat().st_mtime:
        return
    tmp = dst.with_suffix(dst.suffix + ".tmp")
    shutil.copy2(src, tmp)
    tmp.replace(dst)
