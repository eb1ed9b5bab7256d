"""UI fixtures: the dashboard pointed at the session tritonserver, and its Lab torn down afterwards."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.ports import free_port
from tests.helpers import numpy2_python, require_tool, wait_until
from tests.ui import apptest  # noqa: F401 - every page test's AppTests share one component scan (apptest.py)


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


@contextmanager
def lab_environ(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """Point this process's one Lab at env (as an operator: no TBL_VIEWER) while inside; drop the Lab (traffic,
    poller) on the way in and out, and put the variables back as they were."""
    saved = {k: os.environ.get(k) for k in [*env, "TBL_VIEWER"]}
    _drop_lab()
    os.environ.update(env)
    os.environ.pop("TBL_VIEWER", None)
    try:
        yield env
    finally:
        _drop_lab()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def ui_env(triton, tmp_path_factory) -> dict[str, str]:
    """Set the app's environment for the session; drop the Lab (traffic, poller) at the end."""
    with lab_environ(app_environ(triton, tmp_path_factory.mktemp("lab-state"))) as env:
        yield env


def _drop_lab() -> None:
    from app.lab import owner as lab_owner  # noqa: PLC0415

    lab_owner.close()  # the Lab the pages used (remote mode: the server keeps running)


@pytest.fixture
def lab(ui_env):
    """The Lab the pages share; traffic is stopped after each test."""
    from app.ui.state import get_lab  # noqa: PLC0415

    lab = get_lab()
    yield lab
    lab.stop_traffic()


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


# What a page did in each 5 s of its last minute (animation frames, main-thread long tasks, layout shifts, DOM
# mutations): read when the test closes the page and printed when the test failed, so that a click that timed out
# says whether the page was drawing, blocked or moving. Frames are probed once a second (one requestAnimationFrame:
# did it fire, and how late), not counted: a callback on every frame kept Chromium drawing 60 frames a second, which
# cost an open page 0.9-1.0 s of CPU in 15 s where its live fragments cost 1.2-1.4 s (2026-12-05, Dynamic batching
# page, renderer and GPU processes, two runs each)
RENDER_LOG = """(() => {
  const log = window.__tblRender = {start: performance.now(), buckets: {}};
  const bucket = () => { const k = Math.floor((performance.now() - log.start) / 5000) * 5;
    return log.buckets[k] ??= {frames: 0, frameLateMs: 0, longTaskMs: 0, shifts: 0, mutations: 0}; };
  setInterval(() => { const asked = performance.now(); requestAnimationFrame(() => { const b = bucket(); b.frames++;
    b.frameLateMs = Math.max(b.frameLateMs, Math.round(performance.now() - asked)); }); }, 1000);
  try {
    new PerformanceObserver(l => l.getEntries().forEach(e => bucket().longTaskMs += Math.round(e.duration)))
      .observe({type: 'longtask', buffered: true});
    new PerformanceObserver(l => l.getEntries().forEach(() => bucket().shifts++))
      .observe({type: 'layout-shift', buffered: true});
  } catch (e) { log.observerError = String(e); }
  const watch = () => new MutationObserver(m => bucket().mutations += m.length)
    .observe(document.documentElement, {subtree: true, childList: true, attributes: true});
  document.documentElement ? watch() : document.addEventListener('DOMContentLoaded', watch);
  const now = () => Math.round(performance.now() - log.start);
  const script = () => document.querySelector('[data-test-script-state]')?.dataset.testScriptState;
  log.clicks = [];  // where each click landed: the control (button, input, label, summary, link) or none
  document.addEventListener('click', e => { const c = e.target.closest?.('button,input,label,summary,a');
    log.clicks.push({at: now(), x: e.clientX, y: e.clientY, script: script(),
      on: c ? `${c.tagName} ${(c.innerText || c.getAttribute('aria-label') || '').trim().slice(0, 60)}`
            : `${e.target.tagName} (no control)`,
      panel: e.target.closest?.('[data-testid="stExpander"]')?.querySelector('summary')?.innerText.trim().slice(0, 60)
        ?? null}); }, true);
  log.sent = [];  // the last 30 messages to Streamlit's socket (BackMsg bytes): did a click ask for a rerun
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (this.url.endsWith('/_stcore/stream') && data && data.byteLength < 65536) {
      log.sent.push({at: now(), script: script(), bytes: Array.from(new Uint8Array(data.buffer ?? data,
        data.byteOffset ?? 0, data.byteLength))});
      if (log.sent.length > 30) log.sent.shift();
    }
    return send.call(this, data);
  };
})()"""
READ_RENDER_LOG = """() => window.__tblRender && {url: location.pathname, visibility: document.visibilityState,
  script: document.querySelector('[data-test-script-state]')?.dataset.testScriptState,
  now: Math.round(performance.now() - window.__tblRender.start),
  last: Object.fromEntries(Object.entries(window.__tblRender.buckets).slice(-12)),
  clicks: window.__tblRender.clicks.slice(-10), sent: window.__tblRender.sent}"""


def back_messages(sent: list[dict]) -> list[str]:
    """Describe the messages a page sent to Streamlit (RENDER_LOG's sent): when, what, and for a rerun its fragment and
    the widgets it triggers (a button's click)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: PLC0415 - only a failed browser test reads these

    out = []
    for m in sent:
        msg = BackMsg.FromString(bytes(m["bytes"]))
        kind = msg.WhichOneof("type")
        text = f"{m['at']} ms ({m['script']}): {kind}"
        if kind == "rerun_script":
            r = msg.rerun_script
            triggers = [w.id.split("-", 2)[-1] for w in r.widget_states.widgets
                        if w.WhichOneof("value") == "trigger_value" and w.trigger_value]
            text += (f" fragment={r.fragment_id or '-'} auto={r.is_auto_rerun} widgets={len(r.widget_states.widgets)}"
                     f" triggers={triggers}")
        out.append(text)
    return out


def shown(log: dict | str) -> str:
    """A closed page's render log as a failed test's report shows it: its messages to Streamlit decoded."""
    if isinstance(log, str):
        return log
    return json.dumps({**log, "sent": back_messages(log.get("sent") or [])}, ensure_ascii=False)


def click_landing(locator, control: str, tries: int = 3) -> dict:
    """Click locator until the click event lands on it (RENDER_LOG's clicks), control being what the log names it
    ("BUTTON Run"); return that click. A click that landed on no control (the page moved or redrew the element
    between the press and the release) changed nothing and is made again; one that landed on another control fails
    the test, as it may have done something."""
    page = locator.page
    landed: list[dict] = []
    for attempt in range(1, tries + 1):
        seen = page.evaluate("window.__tblRender.clicks.length")
        locator.click(timeout=90_000)
        landed = wait_until(lambda: page.evaluate(f"window.__tblRender.clicks.slice({seen})"), 30,
                            f"the click on {control!r} to reach the page")
        if landed[-1]["on"] == control:
            return landed[-1]
        if not landed[-1]["on"].endswith("(no control)"):
            pytest.fail(f"the click meant for {control!r} landed on another control: {landed}")
        print(f"click {attempt} meant for {control!r} landed on no control, made again: {landed}")
    pytest.fail(f"{tries} clicks meant for {control!r} landed on no control: the last {landed}")


class PatientBrowser:
    """The Chromium of a module, whose new pages wait up to PAGE_TIMEOUT_MS for an element; what each page drew
    is kept when it closes (RENDER_LOG) for a failed test's report."""

    def __init__(self, chromium) -> None:
        self._chromium = chromium
        self.render_logs: list[dict | str] = []  # each closed page's log, or why it has none

    def new_page(self, **kwargs):
        page = self._chromium.new_page(**kwargs)
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.add_init_script(RENDER_LOG)
        close = page.close

        def close_and_keep_log(**close_kwargs):
            try:  # a page whose main thread does not answer in 5 s is reported as such
                self.render_logs.append(page.wait_for_function(READ_RENDER_LOG, timeout=5_000).json_value())
            except Exception as e:  # noqa: BLE001 -- a diagnostic: whatever happened is the finding
                self.render_logs.append(f"{page.url}: no render log ({type(e).__name__}: {str(e).splitlines()[0]})")
            close(**close_kwargs)

        page.close = close_and_keep_log
        return page

    def __getattr__(self, name):
        return getattr(self._chromium, name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report shows what its pages drew in their last minute (PatientBrowser)."""
    outcome = yield
    browser = item.funcargs.get("browser") if hasattr(item, "funcargs") else None
    if isinstance(browser, PatientBrowser) and call.when in ("call", "teardown"):
        report = outcome.get_result()
        if report.failed and browser.render_logs:
            report.sections.append(("pages at close (5 s buckets)", "\n".join(map(shown, browser.render_logs))))
        if call.when == "teardown":
            browser.render_logs.clear()
