"""A deep link opened first on a freshly started dashboard gets the lab's own navigation, and /demo none (issue 26).

Streamlit 1.67 runs an app in its old multipage mode (one page per file of a `pages/` folder beside the entry script,
the entry script not run at all) from the first session of a process until something calls st.navigation: a first
session that opened /demo or /dynamic_batching never ran streamlit_app.py, so every later session of that process
got raw file names in the sidebar, and /demo the navigation to every operator page. The page scripts live in
lab_pages/ now; each case here starts its own dashboard so that the deep link really is the first page it serves.
"""
from __future__ import annotations

import pytest

from app.paths import ROOT
from tests.ui.apptest import wait_until
from tests.ui.fresh_dashboard import fresh_dashboard

# streamlit_app.py's titles, in its order: the lab's navigation (a file-name navigation reads "overview", "demo", …)
LAB_NAVIGATION = ["Overview", "Instances", "Dynamic batching", "Sequence batching", "Priority & queue policy",
                  "The three batchings", "Latency breakdown & diagnosis", "Experiments", "Demo (read-only)"]


def test_no_pages_folder_beside_the_entry_script():
    """The cause itself: Streamlit's old multipage mode starts whenever a folder named pages/ exists there."""
    assert not (ROOT / "pages").exists(), sorted(p.name for p in (ROOT / "pages").iterdir())


def navigation(page) -> list[str]:
    """Return the sidebar navigation's entries once the page has drawn and finished its run ([] when it has none)."""
    wait_until(lambda: page.locator('[data-testid="stMain"] [data-testid="stElementContainer"]').count()
               and page.locator('[data-test-script-state="notRunning"]').count(), 60, "the page to finish its run")
    return [t.strip().splitlines()[-1] for t in page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]


@pytest.mark.browser
@pytest.mark.parametrize("first, then", [("demo", "dynamic_batching"), ("dynamic_batching", "demo")])
def test_a_deep_link_opened_first_gets_the_labs_navigation_and_demo_none(browser, triton, tmp_path, first, then):
    with fresh_dashboard(triton, tmp_path) as url:
        pages, seen = {}, {}
        try:
            for name in (first, then):  # the second tab opens once the first has run: the deep link came first
                pages[name] = browser.new_page(viewport={"width": 1400, "height": 1000})
                pages[name].goto(f"{url}/{name}")
                seen[name] = navigation(pages[name])
            print(seen)
            assert seen["demo"] == [], f"/demo shows a navigation: {seen['demo']}"
            assert seen["dynamic_batching"] == LAB_NAVIGATION, seen["dynamic_batching"]
            heading = pages["dynamic_batching"].get_by_role("heading", name="Dynamic batching", level=1)
            assert heading.count() == 1, "the deep link did not open its own page"
            assert pages["demo"].locator('[data-testid="stSidebarNav"]').count() == 0
        finally:
            for page in pages.values():
                page.close()
