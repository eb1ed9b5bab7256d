"""How a person moves through the dashboard in Chromium: the sidebar's links, the traffic buttons, the captions read."""
from __future__ import annotations

import re

from app.paths import ROOT
from tests.helpers import wait_until

SHOTS = ROOT / "test-output" / "screenshots"
HIST = re.compile(r"Batch sizes formed in the last \d+ min \(size×executions\): (.*)")
MARKERS = re.compile(r"Change markers in the window: (\d+)")
# The title each page draws, where it is not its name in the navigation
HEADINGS = {"Overview": "Triton Batching Lab", "Instances": "Instances (instance_group)",
            "Demo (read-only)": "Triton Batching Lab — live"}
# streamlit_app.py's titles, in its order (a file-name navigation would read "overview", "demo", …)
LAB_NAVIGATION = ["Overview", "Instances", "Dynamic batching", "Sequence batching", "Priority & queue policy",
                  "The three batchings", "Latency breakdown & diagnosis", "Experiments", "Demo (read-only)"]


def caption_match(page, pattern: re.Pattern):
    """Return the first caption's match of pattern, None when no caption matches."""
    for text in page.locator('[data-testid="stCaptionContainer"]').all_inner_texts():
        if m := pattern.search(text):
            return m
    return None


def histogram(page) -> dict[int, int] | None:
    """Parse the batch-size caption: {size: executions}; {} for 'none yet'; None while not drawn."""
    m = caption_match(page, HIST)
    if m is None:
        return None
    return {int(b): int(n.replace(",", "")) for b, n in re.findall(r"(\d+)×([\d,]+)", m.group(1))}


def markers(page) -> int | None:
    """Return how many change markers the live view's caption counts."""
    m = caption_match(page, MARKERS)
    return int(m.group(1)) if m else None


def settled(page) -> None:
    """Wait until the page's script has finished its run."""
    wait_until(lambda: page.locator('[data-test-script-state="notRunning"]').count(), 60, "the page to finish its run")


def navigation(page) -> list[str]:
    """Return the sidebar navigation's entries once the page has drawn and finished its run ([] when it has none)."""
    wait_until(lambda: page.locator('[data-testid="stMain"] [data-testid="stElementContainer"]').count(), 60,
               "the page to draw")
    settled(page)
    return [t.strip().splitlines()[-1] for t in page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]


def nav_links(page) -> dict[str, str]:
    """Return {page title: URL} from the sidebar navigation."""
    links = page.locator('[data-testid="stSidebarNav"] a')
    wait_until(lambda: links.count() >= len(LAB_NAVIGATION), 60, "the sidebar navigation")
    return {a.inner_text().strip().splitlines()[-1]: a.get_attribute("href") for a in links.all()}


def open_overview(page, url: str) -> dict[str, str]:
    """Load the dashboard's first page; return its navigation's links."""
    page.goto(url)
    page.get_by_role("heading", name=HEADINGS["Overview"], level=1).wait_for()
    return nav_links(page)


def follow_link(page, links: dict[str, str], name: str) -> None:
    """Open the page `name` from the sidebar's link, as a user does: the same session, no reload."""
    page.locator(f'[data-testid="stSidebarNav"] a[href="{links[name]}"]').click()
    page.wait_for_url(links[name])
    page.get_by_role("heading", name=HEADINGS.get(name, name), level=1, exact=True).wait_for()
    settled(page)


def open_loop(page, rate: int) -> None:
    """Switch the traffic form to open loop at `rate` req/s."""
    page.get_by_text("open loop (arrival rate)").click()
    field = page.get_by_label("Rate (req/s)")
    field.wait_for()
    field.fill(str(rate))
    field.press("Enter")


def start_traffic(page) -> None:
    """Press Start traffic; wait until Stop traffic can be pressed."""
    page.get_by_role("button", name="Start traffic").click()
    wait_until(lambda: page.get_by_role("button", name="Stop traffic").is_enabled(), 60, "Stop traffic to be enabled")


def stop_traffic(page) -> None:
    """Press Stop traffic when it can be pressed; wait until Start traffic can."""
    settled(page)
    stop = page.get_by_role("button", name="Stop traffic")
    try:
        stop.first.wait_for()
    except Exception as exc:  # noqa: BLE001 - said with what the page showed instead (a CI run met this once)
        try:
            shown = page.locator('[data-testid="stMain"]').inner_text(timeout=5_000)[:3000]
        except Exception as unread:  # noqa: BLE001 - the page itself may be what broke
            shown = f"(its main area could not be read: {unread})"
        raise AssertionError(f"no Stop traffic button ({type(exc).__name__}); the page at {page.url} showed:\n"
                             f"{shown}") from exc
    if stop.first.is_enabled():
        stop.first.click()
        wait_until(lambda: page.get_by_role("button", name="Start traffic").is_enabled(), 60,
                   "Start traffic to be enabled")


def errors_shown(page) -> list[str]:
    """Return the texts of exceptions and error alerts on the page."""
    found = page.locator('[data-testid="stException"]').all_inner_texts()
    return found + [t for t in page.locator('[data-testid="stAlertContentError"]').all_inner_texts()]


def full_screenshot(page, name: str) -> None:
    """Screenshot the whole page to test-output/screenshots/NAME.png (Streamlit scrolls inside its main block)."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer]')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 8000)})
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})
