"""The smoke tier: a handful of pages in Debian's Chromium (driven by Playwright, nothing downloaded) on a real dashboard
(`streamlit run streamlit_app.py`) and a real tritonserver. What a page shows and does, never how fast it draws."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.free_ports import free_port
from tests.helpers import require_tool
from tests.servers import _server_idle_after, restore_model, triton  # noqa: F401 - fixtures

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGE_TIMEOUT_MS = 60_000  # a page's first draw on a busy 2-core host; each wait is bounded, the time is no claim
SCREENSHOTS = ROOT / "test-output" / "screenshots"


def streamlit(env: dict, base: Path, ready_s: float = 90.0, args: tuple[str, ...] = ()):
    """Run `streamlit run streamlit_app.py` with env on 127.0.0.1 (and args); yield its URL; end its process group
    afterwards."""
    port = free_port()
    log_path = base / "streamlit.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none", *args],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
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


running_dashboard = contextmanager(streamlit)  # `with running_dashboard(env, base) as url:` for a test's own


def dashboard_env(base: Path, **more: str) -> dict[str, str]:
    """Return a dashboard's environment: its state in base, no viewer mode, nothing of the test's Triton settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRITON_") and k not in ("TBL_VIEWER", "TBL_SERVER", "PYTHONPATH")}
    env.update({"TBL_STATE_DIR": str(base / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **more})
    return env


@pytest.fixture(scope="module")
def dashboard(triton, tmp_path_factory):
    """The dashboard against the session's tritonserver (as a server someone else started); yield its URL."""
    base = tmp_path_factory.mktemp("dashboard")
    yield from streamlit(dashboard_env(base, **triton.lab_env()), base)


@pytest.fixture
def embedded_dashboard(tmp_path):
    """The dashboard as the Quick start runs it: its own embedded tritonserver, here on a copy of gpu_sim only."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(MODEL_REPOSITORY / "gpu_sim", repo / "gpu_sim", ignore=shutil.ignore_patterns("__pycache__"))
    yield from streamlit(dashboard_env(tmp_path, TBL_MODEL_REPOSITORY=str(repo)), tmp_path)


@pytest.fixture(scope="module")
def chromium():
    """A headless Debian Chromium driven by Playwright, for one module."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    require_tool(str(CHROMIUM), "chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, request):
    """A new page whose waits last up to PAGE_TIMEOUT_MS; on a failure its screenshot is saved and named."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"failed-{request.node.name}.png"
        page.screenshot(path=str(path), full_page=True)
        print(f"the page as it failed: {path}")
    page.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item (the page fixture saves a failed test's screenshot)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
