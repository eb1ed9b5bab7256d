"""UI fixtures: the dashboard pointed at the session tritonserver, and its Lab torn down afterwards."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.ports import free_port
from tests.helpers import numpy2_python, require_tool


def app_environ(triton, state_dir: Path) -> dict[str, str]:
    """Return the variables that make the Lab drive the fixture server and keep its history in state_dir."""
    return {
        "TRITON_URL": triton.endpoint.http_url,
        "TRITON_GRPC_URL": triton.endpoint.grpc_url,
        "TRITON_METRICS_URL": triton.endpoint.metrics_url,
        "TRITON_MODEL_REPOSITORY": str(triton.repo),
        "TRITON_CONTROL_KEY": triton.endpoint.control_key,
        "TBL_STATE_DIR": str(state_dir),
    }


@pytest.fixture(scope="session")
def ui_env(triton, tmp_path_factory) -> dict[str, str]:
    """Set the app's environment for the session; drop the Lab (traffic, poller) at the end."""
    env = app_environ(triton, tmp_path_factory.mktemp("lab-state"))
    saved = {k: os.environ.get(k) for k in [*env, "TBL_VIEWER"]}
    os.environ.update(env)
    os.environ.pop("TBL_VIEWER", None)
    yield env
    _drop_lab()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _drop_lab() -> None:
    from app import lab_owner  # noqa: PLC0415

    lab_owner.close()  # the Lab the pages used (remote mode: the server keeps running)


@pytest.fixture
def lab(ui_env):
    """The Lab the pages share; traffic is stopped after each test."""
    from app.ui.state import get_lab  # noqa: PLC0415

    lab = get_lab()
    yield lab
    lab.load.stop()


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _streamlit(env: dict, base: Path, ready_s: float = 60.0, python: str | Path = sys.executable):
    """Run `streamlit run streamlit_app.py` with env on python; yield its URL; kill its process group afterwards."""
    port = free_port()
    log = (base / "streamlit.log").open("wb")
    proc = subprocess.Popen(
        [str(python), "-m", "streamlit", "run", "streamlit_app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{(base / 'streamlit.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer /_stcore/health within {ready_s:.0f} s")
            time.sleep(0.25)
        yield url
    finally:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):  # TERM: the lab stops its own server
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def remote_dashboard(triton, base: Path):
    """Run a dashboard against the fixture server (remote mode) with its own state in base; yield its URL."""
    env = {**os.environ, **app_environ(triton, base / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.pop("TBL_VIEWER", None)
    yield from _streamlit(env, base)


@pytest.fixture(scope="session")
def dashboard(triton, tmp_path_factory):
    """The dashboard against the fixture server (remote mode); yield its URL."""
    yield from remote_dashboard(triton, tmp_path_factory.mktemp("dashboard"))


def _embedded_env(tmp_path: Path) -> dict[str, str]:
    """Return the environment of a dashboard in embedded mode on a repository holding only gpu_sim (tmp_path)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(MODEL_REPOSITORY / "gpu_sim", repo / "gpu_sim")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRITON_") and k not in ("TBL_VIEWER", "TBL_SERVER", "PYTHONPATH")}
    env.update({"TBL_MODEL_REPOSITORY": str(repo), "TBL_STATE_DIR": str(tmp_path / "state"),
                "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"})
    return env


@pytest.fixture
def embedded_dashboard(tmp_path):
    """The dashboard in embedded mode on a repository holding only gpu_sim: it starts (and restarts) its own
    tritonserver (free ports when 8000-8002 are taken), which ends with streamlit (atexit, parent-death signal)."""
    yield from _streamlit(_embedded_env(tmp_path), tmp_path, ready_s=90.0)


@pytest.fixture
def numpy2_dashboard(tmp_path):
    """The same, on an interpreter whose numpy is 2.x (tests.helpers.numpy2_python)."""
    yield from _streamlit(_embedded_env(tmp_path), tmp_path, python=numpy2_python(tmp_path))


@pytest.fixture(scope="module")
def browser(playwright_module):
    """A headless Debian Chromium driven by Playwright (no downloaded browsers), for one module."""
    require_tool(str(CHROMIUM), "chromium")
    chromium = playwright_module.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    yield PatientBrowser(chromium)
    chromium.close()


PAGE_TIMEOUT_MS = 60_000  # Playwright's 30 s was too short for a page's first draw while the first pass starts its
# four workers' servers and dashboards on two cores (2026-12-02: four tests failed there, every time, at a click)


class PatientBrowser:
    """The Chromium of a module, whose new pages wait up to PAGE_TIMEOUT_MS for an element."""

    def __init__(self, chromium) -> None:
        self._chromium = chromium

    def new_page(self, **kwargs):
        page = self._chromium.new_page(**kwargs)
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        return page

    def __getattr__(self, name):
        return getattr(self._chromium, name)
