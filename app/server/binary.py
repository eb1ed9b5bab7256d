"""Locate the tritonserver binary shipped in the nvidia-pytriton wheel and prepare its backends."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path


class ServerBinaryError(RuntimeError):
    """The embedded tritonserver cannot be found or prepared."""


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
    """Build a private backends folder whose python backend has the stub for this interpreter."""
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
