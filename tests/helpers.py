"""Small test-side helpers: a config reload by protobuf, a gpu_sim input, polling for a condition, the processes
under a pid (/proc)."""
from __future__ import annotations

import ast
import functools

import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np
import tritonclient.http as http
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2


def read_config(repo: Path, model: str) -> model_config_pb2.ModelConfig:
    """Parse a model's config.pbtxt."""
    return text_format.Parse((Path(repo) / model / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())


def reload(endpoint, model: str, config: model_config_pb2.ModelConfig) -> None:
    """Hot-reload a model with a config override, over gRPC as the lab does (an HTTP load stalls HTTP traffic)."""
    from app.server.control import ModelControl  # noqa: PLC0415

    body = json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True))
    ModelControl(endpoint).load(model, body, timeout_s=120)


def gpu_sim_input(rows: int = 1) -> http.InferInput:
    """Return a ready gpu_sim input of `rows` rows."""
    inp = http.InferInput("INPUT", [rows, 256], "FP32")
    inp.set_data_from_numpy(np.ones((rows, 256), np.float32))
    return inp


class Clock:
    """A clock the test moves: call it for `now`, set `now` to move it."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def lab_sh_functions(*names: str) -> str:
    """Return the text of these functions of scripts/lab.sh, for a test to run them in a bash of its own."""
    text = (Path(__file__).resolve().parent.parent / "scripts" / "lab.sh").read_text()
    return "\n".join(re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", text, re.MULTILINE | re.DOTALL).group(0)
                     for name in names)


def followed_after_restart(lab, before) -> None:
    """Check a lab after lab.restart(resume_traffic=True) of its own server, which had answered at before: ready
    where it came back, and the resumed traffic answered there.

    The same ports were asked for (tests/unit/lab/test_restart.py); on a shared machine another process may take one
    while the server is down (2026-12-07, CI run 40: the parallel workers' servers prefer 8000-8002 too), and then
    the lab follows the server where it came back."""
    after = lab.server_facts().endpoint
    assert lab.status().ready, f"not ready after the restart, at {after} (before it: {before})"
    if after != before:
        print(f"the server came back on other ports: {before} -> {after}")
    wait_until(lambda: (lab.traffic_snapshot(0).summary.get("all") or {}).get("ok", 0) >= 5, 60,
               f"answers from the restarted server at {after.http_url}")


def wait_until(condition, timeout_s: float = 30.0, what: str = "condition"):
    """Return condition()'s first truthy value, polling; fail after timeout_s naming what and the last value."""
    import pytest  # noqa: PLC0415 - only the tests import this module

    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


def require_tool(path: str, package: str) -> None:
    """Skip when a Debian tool is missing; with CI=true a missing tool fails instead (CI installs them)."""
    if not os.path.exists(path):
        unavailable(f"{path} is not installed: these tests need Debian's {package} (apt-get install {package})")


def unavailable(message: str) -> None:
    """Skip the test for a missing tool or daemon; with CI=true fail instead (CI installs and starts them)."""
    import pytest  # noqa: PLC0415

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def copy_of_the_lab_repository(folder: Path, name: str = "repo") -> Path:
    """Return a copy of the lab's own model repository (no byte code), made at folder/name."""
    import shutil  # noqa: PLC0415

    from app.paths import MODEL_REPOSITORY  # noqa: PLC0415

    return Path(shutil.copytree(MODEL_REPOSITORY, folder / name, ignore=shutil.ignore_patterns("__pycache__")))


@contextmanager
def embedded_lab_serving(repo: Path, state: Path, env: dict[str, str] | None = None) -> Iterator:
    """Yield a Lab whose own embedded server serves repo (its state in state, env set while it lives); close it."""
    import pytest  # noqa: PLC0415

    from app.lab.root import Lab  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as mp:
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        mp.setenv("TBL_STATE_DIR", str(state))
        lab = Lab.create({"TBL_MODEL_REPOSITORY": str(repo)})
        try:
            yield lab
        finally:
            lab.close()


def model_module(model: str):
    """Import a model's 1/model.py outside Triton (its cost model is plain Python)."""
    from app.paths import MODEL_REPOSITORY  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location(f"{model}_model", MODEL_REPOSITORY / model / "1/model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def numpy2_python(base: Path, version: str = "2.1.3") -> Path:
    """Return the python of a new venv under base whose site-packages declare numpy `version` (its metadata, found
    ahead of the lab's packages, which a .pth adds after it): what the lab sees after `pip install numpy==2...`."""
    venv = base / "numpy2-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    info = site / f"numpy-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: numpy\nVersion: {version}\n")
    lab_site = sysconfig.get_paths()["purelib"]  # the lab's packages, after numpy's metadata, with their own .pth files
    (site / "zz_lab.pth").write_text(f"import site; site.addsitedir({lab_site!r})\n")
    return venv / "bin" / "python"


class Proc(NamedTuple):
    """One process as /proc shows it."""

    pid: int
    ppid: int
    pgid: int
    comm: str
    argv: tuple[str, ...]


def processes() -> list[Proc]:
    """Return every process of the machine now (from /proc; one that ends meanwhile is left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]  # the name may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp ...
        found.append(Proc(int(entry.name), int(fields[1]), int(fields[2]), comm,
                          tuple(a.decode(errors="replace") for a in argv if a)))
    return found


def descendants(pid: int) -> list[Proc]:
    """Return every process under pid, however deep (its children first, then theirs, ...)."""
    children: dict[int, list[Proc]] = {}
    for proc in processes():
        children.setdefault(proc.ppid, []).append(proc)
    out, level = [], [pid]
    while level:
        more = [child for parent in level for child in children.get(parent, ())]
        out += more
        level = [p.pid for p in more]
    return out


@functools.cache
def parsed(path: Path) -> ast.Module:
    """Return a source file's syntax tree, parsed once per test process (the code's structure tests share it)."""
    return ast.parse(Path(path).read_text(), str(path))
