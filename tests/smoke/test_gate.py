"""A name the dashboard does not answer to: a page reached through DNS rebinding never gets a session."""
from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.smoke.conftest import CHROMIUM, CHROMIUM_ARGS, dashboard_env, running_dashboard

NAME, REBIND = "lab.test", "rebind.attacker.example"


@pytest.fixture(scope="module")
def name_chromium():
    """A Chromium that resolves lab.test and rebind.attacker.example to 127.0.0.1 (a rebinding page's view)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    rules = f"--host-resolver-rules=MAP {NAME} 127.0.0.1, MAP {REBIND} 127.0.0.1"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[*CHROMIUM_ARGS, rules])
        yield browser
        browser.close()


def test_a_rebinding_page_gets_no_controls_and_loopback_does(triton, name_chromium, tmp_path):
    args = ("--server.allowedHosts", "127.0.0.1", "--server.allowedHosts", NAME)
    with running_dashboard(dashboard_env(tmp_path, **triton.lab_env()), tmp_path, args=args) as server:
        port = server.rsplit(":", 1)[1]
        page = name_chromium.new_page()
        page.set_default_timeout(60_000)
        try:
            page.goto(f"http://{REBIND}:{port}/dynamic_batching")
            log = tmp_path / "streamlit.log"
            wait_until(lambda: f"host={REBIND}:{port}" in log.read_text(), 60,
                       "the refused WebSocket in the dashboard's log")
            assert page.get_by_role("button", name="Apply").count() == 0
            assert page.get_by_role("heading", name="Dynamic batching").count() == 0
            page.goto(f"http://127.0.0.1:{port}/dynamic_batching")  # the same browser by a loopback name: operator
            page.get_by_role("button", name="Apply").wait_for()
        finally:
            page.close()
