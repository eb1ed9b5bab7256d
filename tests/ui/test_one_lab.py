"""One lab per process (issue 29): Streamlit's cache clear, which any session may send, never forks the lab."""
from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime import caching
from streamlit.testing.v1 import AppTest

from app.lab import owner as lab_owner
from app.paths import ROOT
from tests.helpers import descendants, processes
from tests.ui.apptest import RUN_TIMEOUT_S, ok, texts, wait_until
from tests.ui.test_browser import LIGHT_RPS, nav_links, open_loop, open_page, start_traffic, stop_traffic


def test_a_cache_clear_keeps_the_one_lab(lab):
    from app.ui.state import get_lab  # noqa: PLC0415

    caching.cache_data.clear()  # what Streamlit's clear-cache message does (AppSession._handle_clear_cache_request)
    caching.cache_resource.clear()
    assert get_lab() is lab and lab_owner.current() is lab


def test_a_lab_that_could_not_start_is_tried_again(ui_env, monkeypatch):
    lab_owner.close()  # the session's Lab: the page below builds the process's next one
    monkeypatch.setenv("TBL_SERVER", "bogus")  # Lab.create refuses it before starting anything
    at = AppTest.from_file(str(ROOT / "lab_pages/overview.py"), default_timeout=RUN_TIMEOUT_S).run()
    assert any("could not be started" in t for t in texts(at.error)), texts(at.error)
    assert lab_owner.current() is None  # nothing kept: no broken singleton
    monkeypatch.delenv("TBL_SERVER")
    ok([b for b in at.button if b.label == "Try again"][0].click().run())
    assert lab_owner.current() is not None


# --- the real dashboard in Chromium: the clear-cache message from a /demo session with traffic running -----------

# Streamlit's own "c" shortcut and menu item are off here (client.toolbarMode = "viewer"), but the server obeys the
# message from any session: a page's script sends it over the page's own websocket, as a visitor's could.
CAPTURE_SOCKETS = """(() => {
  const Native = window.WebSocket;
  window.__tblSockets = [];
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); window.__tblSockets.push(this); }
  };
})();"""
SEND = """bytes => {
  const open = window.__tblSockets.filter(s => s.readyState === WebSocket.OPEN && s.url.endsWith('/_stcore/stream'));
  if (open.length !== 1) return `${open.length} open Streamlit sockets`;
  open[0].send(new Uint8Array(bytes));
  return 'sent';
}"""


def dashboard_pid(url: str) -> int:
    """Return the PID of the `streamlit run` process serving url."""
    port = str(int(url.rsplit(":", 1)[1]))
    found = [p.pid for p in processes() if "streamlit" in p.argv and port in p.argv]
    assert len(found) == 1, f"{len(found)} streamlit processes on port {port}: {found}"
    return found[0]


def lab_processes(dashboard: int) -> dict[str, list[int]]:
    """Return the PIDs of the dashboard's tritonserver processes, their process groups and its load generator
    workers."""
    under = descendants(dashboard)
    servers = [p for p in under if p.comm == "tritonserver"]
    return {"tritonserver": sorted(p.pid for p in servers),
            "tritonserver groups": sorted({p.pgid for p in servers}),
            "workers": sorted(p.pid for p in under if p.argv[1:4] == ("-m", "loadgen", "worker"))}


def server_url(dashboard: int) -> str:
    """Return the HTTP URL of the dashboard's tritonserver (from its command line)."""
    for proc in descendants(dashboard):
        if proc.comm == "tritonserver":
            args = dict(a.split("=", 1) for a in proc.argv[1:] if a.startswith("--") and "=" in a)
            return f"http://{args['--http-address']}:{args['--http-port']}"
    raise AssertionError("the dashboard runs no tritonserver")


def inference_count(http_url: str, model: str = "gpu_sim") -> int:
    """Return the server's count of inferences of model (its statistics API)."""
    with urllib.request.urlopen(f"{http_url}/v2/models/{model}/stats", timeout=5) as reply:
        return int(json.load(reply)["model_stats"][0]["inference_count"])


class Counter:
    """Polls a growing count; says when it has not moved for quiet_s."""

    def __init__(self, read, quiet_s: float = 3.0) -> None:
        self.read, self.quiet_s = read, quiet_s
        self.value, self.moved_at = read(), time.monotonic()

    def grew_by(self, n: int):
        start = self.value
        return lambda: (v := self.read()) - start >= n and v

    def quiet(self) -> bool:
        value = self.read()
        if value != self.value:
            self.value, self.moved_at = value, time.monotonic()
        return time.monotonic() - self.moved_at >= self.quiet_s


@pytest.mark.browser
def test_a_demo_sessions_cache_clear_forks_no_lab_and_the_operator_can_still_stop_the_run(embedded_dashboard, browser):
    dashboard = dashboard_pid(embedded_dashboard)
    operator = browser.new_page(viewport={"width": 1400, "height": 1000})
    demo = browser.new_page(viewport={"width": 1400, "height": 1000})
    demo.add_init_script(CAPTURE_SOCKETS)
    try:
        open_page(operator, embedded_dashboard, "Triton Batching Lab")
        links = nav_links(operator)
        open_page(operator, links["Dynamic batching"], "Dynamic batching")
        open_loop(operator, LIGHT_RPS)
        start_traffic(operator)
        before = lab_processes(dashboard)
        print("before the clear:", before)
        assert len(before["tritonserver"]) == 1 and len(before["tritonserver groups"]) == 1, before
        assert len(before["workers"]) == 1, before
        served = Counter(lambda: inference_count(server_url(dashboard)))
        wait_until(served.grew_by(100), 60, "100 of the operator's requests served")

        demo.goto(f"{embedded_dashboard}/demo")
        demo.get_by_role("heading", name="Triton Batching Lab — live", level=1).wait_for(timeout=60_000)
        running = demo.locator('[data-testid="stAlert"]', has_text="Running against")
        wait_until(lambda: running.count(), 30, "the operator's run in the demo's status")
        for round_ in (1, 2):  # the issue saw a third server and worker after a second round
            sent = demo.evaluate(SEND, list(BackMsg(clear_cache=True).SerializeToString()))
            assert sent == "sent", sent
            demo.reload()  # the next page load of the read-only session: it asks for the lab again
            demo.get_by_role("heading", name="Triton Batching Lab — live", level=1).wait_for(timeout=60_000)
            # the operator's own session runs its pages again (full script runs: each asks for the lab)
            open_page(operator, links["Overview"], "Triton Batching Lab")
            open_page(operator, links["Dynamic batching"], "Dynamic batching")
            after = lab_processes(dashboard)  # a lab built by these page loads has started by now (before the title)
            print(f"after clear {round_}:", after)
            assert after == before, f"processes before the clear {before}, after clear {round_} {after}"
            wait_until(lambda: running.count(), 30, f"the operator's run in the demo's status after clear {round_}")

        status = operator.locator('[data-testid="stAlert"]', has_text=re.compile(r"Running.* against"))
        wait_until(lambda: status.count(), 30, "the operator's status saying Running")
        stop = operator.get_by_role("button", name="Stop traffic")
        wait_until(lambda: stop.count() and stop.is_enabled(), 30, "the operator's Stop traffic enabled")
        wait_until(served.grew_by(100), 60, "100 more requests served after the clears (the operator's run)")
        stop_traffic(operator)
        wait_until(served.quiet, 30, "the server to get no more requests once the operator stopped the run")
        assert lab_processes(dashboard) == before  # the one worker stays for the next run; nothing else started
    finally:
        demo.close()
        stop_traffic(operator)
        operator.close()
