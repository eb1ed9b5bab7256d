"""How the dashboard is entered: the Quick start's own server (and its restart), and a deep link opened first."""
from __future__ import annotations

from tests.helpers import wait_until
from tests.smoke.browsing import (LAB_NAVIGATION, follow_link, histogram, navigation, open_loop, open_overview,
                                  start_traffic, stop_traffic)
from tests.smoke.conftest import dashboard_env, running_dashboard


def test_the_quick_start_dashboard_runs_its_own_server_and_restarts_it(embedded_dashboard, page):
    links = open_overview(page, embedded_dashboard)
    page.get_by_text("embedded tritonserver (nvidia-pytriton wheel, CPU)").wait_for()
    follow_link(page, links, "Dynamic batching")
    open_loop(page, 20)
    start_traffic(page)
    try:
        before = wait_until(lambda: (n := sum((histogram(page) or {}).values())) >= 20 and n, 90,
                            "20 executions before the restart")
        follow_link(page, links, "Overview")
        page.get_by_role("button", name="Restart the embedded server").click()
        page.get_by_role("button", name="Restart and resume the traffic").click()
        page.get_by_text("Server restarted, traffic resumed.").wait_for(timeout=120_000)
        follow_link(page, links, "Dynamic batching")
        after = wait_until(lambda: (n := sum((histogram(page) or {}).values())) >= before + 20 and n, 90,
                           f"the {before} executions from before the restart kept, and more after it")
        print(f"executions in the window: {before} before the restart, {after} after")
    finally:
        stop_traffic(page)


def test_a_deep_link_opened_first_gets_the_labs_navigation_and_demo_none(triton, chromium, tmp_path):
    """Streamlit runs its old multipage mode until something calls st.navigation: a first session that opened /demo
    must not leave file names in every later session's sidebar (the page scripts live in lab_pages/ for that)."""
    with running_dashboard(dashboard_env(tmp_path, **triton.lab_env()), tmp_path) as server:
        demo, concept = chromium.new_page(), chromium.new_page()
        try:
            demo.goto(f"{server}/demo")  # the first page this dashboard serves
            seen_demo = navigation(demo)
            concept.goto(f"{server}/dynamic_batching")
            seen_concept = navigation(concept)
            assert seen_demo == [], f"/demo shows a navigation: {seen_demo}"
            assert seen_concept == LAB_NAVIGATION, seen_concept
            assert concept.get_by_role("heading", name="Dynamic batching", level=1).count() == 1
        finally:
            demo.close()
            concept.close()
