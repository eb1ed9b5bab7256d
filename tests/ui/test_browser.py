"""The dashboard in a real Chromium: live charts react to a config change; a screenshot of every page."""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import replace

import pytest

from app.config import ConfigHistory, ConfigService, set_settings, settings_of
from app.paths import ROOT
from tests.ui.apptest import wait_until

pytestmark = pytest.mark.browser

SHOTS = ROOT / "test-output" / "screenshots"
HIST = re.compile(r"Batch sizes formed in the last \d+ min \(size×executions\): (.*)")
MARKERS = re.compile(r"Change markers in the window: (\d+)")


def captions(page) -> list[str]:
    return page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()


def caption_match(page, pattern: re.Pattern):
    for text in captions(page):
        m = pattern.search(text)
        if m:
            return m
    return None


def histogram(page) -> dict[int, int] | None:
    """Parse the batch-size caption: {size: executions}; {} for 'none yet'; None while not drawn."""
    m = caption_match(page, HIST)
    if m is None:
        return None
    return {int(b): int(n.replace(",", "")) for b, n in re.findall(r"(\d+)×([\d,]+)", m.group(1))}


def markers(page) -> int | None:
    m = caption_match(page, MARKERS)
    return int(m.group(1)) if m else None


def squashed_charts(page) -> list[str]:
    """Return the y-axis descriptions of charts drawn with fewer than two y tick labels (a collapsed plot)."""
    return page.locator('[data-testid="stVegaLiteChart"]').evaluate_all("""charts => charts.flatMap(c =>
        [...c.querySelectorAll('g[aria-label^="Y-axis"]')]
        .filter(g => g.querySelectorAll('.role-axis-label text').length < 2).map(g => g.getAttribute('aria-label')))""")


def nav_links(page) -> dict[str, str]:
    """Return {page title: URL} from the sidebar navigation."""
    links = page.locator('[data-testid="stSidebarNav"] a')
    wait_until(lambda: links.count() >= 7, 30, "the sidebar navigation")
    return {a.inner_text().strip().splitlines()[-1]: a.get_attribute("href") for a in links.all()}  # icon, blank, title


def open_page(page, url: str, title: str) -> None:
    page.goto(url)
    page.get_by_role("heading", name=title, level=1).wait_for(timeout=30_000)


# The title each page draws, where it is not its name in the navigation
HEADINGS = {"Overview": "Triton Batching Lab", "Instances": "Instances (instance_group)",
            "Demo (read-only)": "Triton Batching Lab — live"}


def follow_link(page, links: dict[str, str], name: str) -> None:
    """Open the page `name` from the sidebar's link, as a user does: the same session, no reload. A goto loads the
    whole app again: 1.5-1.9 s of the renderer's CPU, where following a link took 0.7 s (2026-12-05)."""
    page.locator(f'[data-testid="stSidebarNav"] a[href="{links[name]}"]').click()
    page.wait_for_url(links[name])
    page.get_by_role("heading", name=HEADINGS.get(name, name), level=1, exact=True).wait_for(timeout=30_000)
    wait_until(lambda: page.locator('[data-test-script-state="notRunning"]').count(), 60, f"{name} to finish its run")


def set_delay(triton, tmp_path, delay_us: int) -> None:
    """Apply a max_queue_delay to gpu_sim outside the dashboard (the starting point of the test)."""
    service = ConfigService(triton.endpoint, triton.repo, history=ConfigHistory(tmp_path / "history"))
    current = service.current("gpu_sim")
    s = settings_of(current)
    service.apply("gpu_sim", set_settings(current, replace(
        s, dynamic_batching=replace(s.dynamic_batching, max_queue_delay_microseconds=delay_us))))


def full_screenshot(page, name: str) -> None:
    """Screenshot the whole page: Streamlit scrolls inside stMain, so grow the viewport to its content first."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer]')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 8000)})
    page.wait_for_timeout(300)  # let the charts re-lay out to the new size (not an assertion)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


# Traffic for tests that need data on the charts, not load: the form's default (8 in flight) keeps gpu_sim saturated
# and cost the browser tests most of their CPU (test_screenshot_every_page: 118 s alone, 172-227 s beside others).
LIGHT_RPS = 60


def start_traffic(page) -> None:
    page.get_by_role("button", name="Start traffic").click()
    wait_until(lambda: page.get_by_role("button", name="Stop traffic").is_enabled(), 60, "Stop traffic to be enabled")


def stop_traffic(page) -> None:
    """Stop the dashboard's traffic (the page must be done drawing, or the button may not be there yet)."""
    wait_until(lambda: page.locator('[data-test-script-state="notRunning"]').count(), 60, "the page to finish its run")
    stop = page.get_by_role("button", name="Stop traffic")
    stop.first.wait_for(timeout=60_000)
    if stop.count() and stop.is_enabled():
        stop.click()
        wait_until(lambda: page.get_by_role("button", name="Start traffic").is_enabled(), 60, "Start traffic to be enabled")


@contextmanager
def dynamic_batching_page(browser, dashboard: str):
    """Open the Dynamic batching page in a new tab; stop its traffic and close it afterwards."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_page(page, dashboard, "Triton Batching Lab")
        follow_link(page, nav_links(page), "Dynamic batching")
        yield page
    finally:
        stop_traffic(page)
        page.close()


def open_loop(page, rate: int) -> None:
    """Switch the traffic form to open loop at `rate` req/s."""
    page.get_by_text("open loop (arrival rate)").click()
    field = page.get_by_label("Rate (req/s)")
    field.wait_for()
    field.fill(str(rate))
    field.press("Enter")


def test_raising_the_delay_moves_the_live_histogram(dashboard, browser, triton, restore_model, tmp_path):
    restore_model("gpu_sim")
    set_delay(triton, tmp_path, 0)
    with dynamic_batching_page(browser, dashboard) as page:
        open_loop(page, 30)  # a low rate: at delay 0 the server is mostly idle, so batches are mostly 1
        start_traffic(page)
        before = wait_until(lambda: (h := histogram(page)) and sum(h.values()) >= 100 and h, 60, "100 executions at delay 0")
        assert before.get(1, 0) >= 0.7 * sum(before.values()), before
        marks = markers(page)

        thumb = page.locator('[data-testid="stSlider"]', has_text="max_queue_delay_microseconds").get_by_role("slider")
        thumb.focus()
        thumb.press("End")  # the last option: 20000 µs
        wait_until(lambda: "max_queue_delay_microseconds: 20000" in page.locator('[data-testid="stCode"]').first.inner_text(),
             30, "the pending diff of the delay")
        page.get_by_role("button", name="Apply").click()
        page.get_by_text("reloaded gpu_sim").wait_for(timeout=60_000)
        wait_until(lambda: (markers(page) or 0) >= marks + 1, 60, "a change marker after the apply")

        multi = lambda h: sum(n for b, n in h.items() if b >= 2)  # noqa: E731
        after = wait_until(lambda: (h := histogram(page)) and multi(h) >= multi(before) + 30 and h, 60,
                     "30 more executions of batch size >= 2 after raising the delay")
        assert max(after) >= 2, after
        # under traffic, with change markers, every chart must show a readable y axis (not a plot squashed flat)
        wait_until(lambda: not squashed_charts(page), 15, f"every live chart to have y tick labels: {squashed_charts(page)}")
        full_screenshot(page, "dynamic_batching_after_change")


@pytest.mark.timeout(900)  # every page in turn, each wait bounded: 112-118 s on a quiet machine, 290 s when the
# shared host stole CPU (2026-12-02: every Chromium test 2-3x slower), 447 s in a first pass under a 1.1-CPU quota
def test_screenshot_every_page(dashboard, browser):
    with dynamic_batching_page(browser, dashboard) as page:
        links = nav_links(page)
        open_loop(page, LIGHT_RPS)
        start_traffic(page)  # charts with data in every gpu_sim screenshot
        for title in links:
            follow_link(page, links, title)
            if histogram(page) is not None and title != "Sequence batching":  # a live view of gpu_sim: wait for data
                wait_until(lambda: histogram(page), 60, f"batches in the live view of {title}")
            assert not page.locator('[data-testid="stException"]').count(), f"exception on {title}"
            full_screenshot(page, re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_"))
        open_page(page, links["Dynamic batching"], "Dynamic batching")  # where the traffic is stopped


def batch_total(page) -> int:
    return sum((histogram(page) or {}).values())


def test_a_restart_keeps_the_history_and_resumes_the_traffic(embedded_dashboard, browser):
    with dynamic_batching_page(browser, embedded_dashboard) as page:
        links = nav_links(page)
        open_loop(page, LIGHT_RPS)
        start_traffic(page)
        before = wait_until(lambda: (n := batch_total(page)) >= 200 and n, 90, "200 executions before the restart")
        follow_link(page, links, "Overview")
        page.get_by_role("button", name="Restart the embedded server").click()
        page.get_by_text("stops the running traffic").wait_for(timeout=30_000)  # the confirmation says so
        page.get_by_role("button", name="Restart and resume the traffic").click()
        page.get_by_text("Server restarted, traffic resumed.").wait_for(timeout=120_000)
        follow_link(page, links, "Dynamic batching")
        # the executions from before the restart are still in the 3-minute window, and new ones add to them
        after = wait_until(lambda: (n := batch_total(page)) >= before + 100 and n, 90,
                           f"the history of {before} executions kept and 100 more after the restart")
        assert page.get_by_role("button", name="Stop traffic").is_enabled()  # the traffic came back
        assert (markers(page) or 0) >= 2, captions(page)  # traffic start + the restart band (+ the resumed start)
        banner = page.get_by_text("Server not answering")
        try:
            wait_until(lambda: not banner.count(), 60, "the server-down banner to go once the server answers again")
        except BaseException:
            print("banner still shown:", banner.all_inner_texts(), "captions:", captions(page))
            raise
        full_screenshot(page, "restart_kept_history")
        print(f"executions in the window: {before} before the restart, {after} after")


def test_a_server_that_cannot_start_is_explained_with_its_fix(numpy2_dashboard, browser, tmp_path):
    """numpy 2 under the wheel's Python backend stub: the page says so, with the command that fixes it, and offers
    to try again; no tritonserver was started (none of its logs), nothing crashed."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(numpy2_dashboard)
        page.get_by_text("could not be started").wait_for(timeout=60_000)
        alert = page.locator('[data-testid="stAlert"]').first
        wait_until(lambda: "numpy<2" in alert.inner_text(), 30, "the alert's explanation (it renders after the title)")
        assert "numpy 2.1.3" in alert.inner_text() and 'pip install "numpy<2"' in alert.inner_text(), alert.inner_text()
        page.get_by_role("button", name="Try again").wait_for(timeout=30_000)
        assert not page.locator('[data-testid="stException"]').count()
        full_screenshot(page, "server_cannot_start")
    finally:
        page.close()
    assert not list((tmp_path / "state").glob("**/tritonserver-*.log"))


def test_demo_mode_shows_the_operators_live_lab_with_no_control(dashboard, browser):
    operator = browser.new_page(viewport={"width": 1400, "height": 1000})
    demo = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_page(operator, dashboard, "Triton Batching Lab")
        follow_link(operator, nav_links(operator), "Dynamic batching")
        open_loop(operator, LIGHT_RPS)
        start_traffic(operator)  # the operator's traffic, and its start marker
        demo.goto(f"{dashboard}/demo")
        demo.get_by_role("heading", name="Triton Batching Lab — live", level=1).wait_for(timeout=30_000)
        wait_until(lambda: (histogram(demo) or {}) and sum(histogram(demo).values()) >= 50, 60,
                   "the operator's traffic on the demo charts")
        wait_until(lambda: demo.locator('[data-testid="stAlert"]', has_text="Running against").count(), 30,
                   "the running traffic in the demo's status")
        assert (markers(demo) or 0) >= 1, captions(demo)  # the operator's markers
        charts = demo.locator('[data-testid="stVegaLiteChart"]')
        wait_until(lambda: charts.count() >= 5, 30, f"the demo's five live charts ({charts.count()} drawn)")
        for control in ('[data-testid="stButton"]', '[data-testid="stSlider"]', '[data-testid="stTextArea"]',
                        '[data-testid="stSidebarNav"]', '[data-testid="stNumberInput"]', '[data-testid="stAppDeployButton"]'):
            assert demo.locator(control).count() == 0, f"demo shows a control: {control}"
        wait_until(lambda: operator.get_by_text("demo viewer").count(), 30, "the operator to see the viewer")
        nan = demo.locator('[data-testid="stVegaLiteChart"] text', has_text="NaN")
        wait_until(lambda: not nan.count(), 15, "no chart axis reading NaN")
        full_screenshot(demo, "demo_mode")
    finally:
        demo.close()
        stop_traffic(operator)
        operator.close()


def test_a_rate_the_generator_cannot_send_is_warned_about(dashboard, browser):
    with dynamic_batching_page(browser, dashboard) as page:
        open_loop(page, 5000)  # the highest rate the form takes; far beyond this machine's generator and server
        start_traffic(page)
        warning = page.get_by_text("The load generator is not keeping up")
        warning.wait_for(timeout=60_000)
        full_screenshot(page, "cannot_keep_up")
        print(warning.inner_text())


TYPED = "**not bold** $5 vs $7 :red[plain] a:b [no link](http://127.0.0.1/)"


def test_a_label_someone_typed_is_shown_as_typed(dashboard, browser):
    """Streamlit sets Markdown, LaTeX ($…$) and directives (:red[…]) in alerts and headings: a run's label is not."""
    with dynamic_batching_page(browser, dashboard) as page:
        open_loop(page, LIGHT_RPS)
        start_traffic(page)
        running = page.locator('[data-testid="stAlert"]', has_text="Running against")

        def elapsed() -> int:
            m = re.search(r"\(([\d,]+) s\)", running.first.inner_text()) if running.count() else None
            return int(m.group(1).replace(",", "")) if m else 0

        wait_until(lambda: elapsed() >= 4, 60, "4 s of traffic (a run is saved from 2 s on)")
        runs = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            open_page(runs, nav_links(page)["Experiments"], "Experiments")
            runs.get_by_role("tab", name="Saved runs").click()
            alerts = runs.locator('[data-testid="stAlert"]')

            def save(label: str) -> str:
                """Save the current run under label; return the text of the alert that says so."""
                field = runs.get_by_label("Label for the current run")
                field.fill(label)
                field.press("Enter")
                runs.get_by_role("button", name="Save current run").click()
                saved = alerts.filter(has_text=re.compile(r"^Saved run \d+: ")).filter(has_text=f": {label} (")
                wait_until(lambda: saved.count(), 30, f"the alert saying {label!r} was saved ({alerts.all_inner_texts()})")
                return saved.first.inner_text()

            first = save(TYPED)
            print(first)
            assert first.startswith(f"Saved run 1: {TYPED} ("), first
            save("second")
            heading = runs.get_by_role("heading", name=re.compile("^A: "))
            heading.wait_for(timeout=30_000)
            print(heading.inner_text())
            assert heading.inner_text() == f"A: {TYPED} vs B: second", heading.inner_text()
            assert runs.locator(".katex, .katex-error").count() == 0, "a label was set as a formula"
            assert runs.get_by_role("link", name="no link").count() == 0, "a label's [text](url) became a link"
            full_screenshot(runs, "typed_labels")
        finally:
            runs.close()
