"""The dashboard in Chromium on a real tritonserver: every page opens, and a change made on a page serves and shows."""
from __future__ import annotations


from app.config.model_config import read_config
from app.config.read import settings_of
from tests.helpers import wait_until
from tests.smoke.browsing import (LAB_NAVIGATION, errors_shown, follow_link, full_screenshot, histogram, markers,
                                  open_loop, open_overview, start_traffic, stop_traffic)


def test_every_page_opens_from_the_sidebar_with_no_error(dashboard, page):
    links = open_overview(page, dashboard)
    assert list(links) == LAB_NAVIGATION, list(links)
    follow_link(page, links, "Dynamic batching")
    open_loop(page, 20)  # light traffic: the live views draw data, not load
    start_traffic(page)
    try:
        for name in LAB_NAVIGATION:  # the last, /demo, has no navigation of its own
            follow_link(page, links, name)
            wait_until(lambda: page.locator('[data-testid="stMain"] [data-testid="stElementContainer"]').count(), 60,
                       f"{name} to draw")
            assert not errors_shown(page), (name, errors_shown(page))
            full_screenshot(page, f"page-{name.lower().replace(' ', '_').replace('&', 'and')}")
    finally:
        page.goto(links["Dynamic batching"])
        stop_traffic(page)


def test_a_delay_applied_on_the_page_serves_is_written_and_marked(dashboard, page, triton, restore_model):
    restore_model("gpu_sim")
    links = open_overview(page, dashboard)
    follow_link(page, links, "Dynamic batching")
    open_loop(page, 30)
    start_traffic(page)
    try:
        wait_until(lambda: (h := histogram(page)) and sum(h.values()) >= 20, 90, "20 executions on the live view")
        before = markers(page) or 0
        thumb = page.locator('[data-testid="stSlider"]', has_text="max_queue_delay_microseconds").get_by_role("slider")
        thumb.focus()
        thumb.press("End")  # the last option: 20000 µs
        wait_until(lambda: "max_queue_delay_microseconds: 20000" in page.locator('[data-testid="stCode"]').first
                   .inner_text(), 30, "the pending diff of the delay")
        # What if opens by itself when a knob moves (closed, the twin does not run) and says what it predicts
        whatif = page.locator('[data-testid="stExpander"]', has_text="What if")
        wait_until(lambda: whatif.locator("details[open]").count() == 1, 30, "What if to open once a knob moved")
        wait_until(lambda: whatif.get_by_text("The twin: a discrete-event model").count()
                   or whatif.get_by_text("No prediction").count(), 60,
                   "the twin's prediction for the moved knob, or why it has none, in What if")
        page.get_by_role("button", name="Apply").click()
        page.get_by_text("reloaded gpu_sim").wait_for()
        written = settings_of(read_config(triton.repo / "gpu_sim" / "config.pbtxt")).dynamic_batching
        assert written.max_queue_delay_microseconds == 20000, written
        wait_until(lambda: (markers(page) or 0) >= before + 1, 60, "a change marker after the Apply")
        # requests now wait for company: batches of two or more form (30 req/s, up to 20 ms each)
        wait_until(lambda: sum(n for b, n in (histogram(page) or {}).items() if b >= 2) >= 5, 90,
                   f"batches of two or more after the Apply: {histogram(page)}")
        full_screenshot(page, "dynamic_batching_after_apply")
    finally:
        stop_traffic(page)
