"""A sweep result, an A/B result and their reports in a real Chromium at 1280 and 1920 px: every chart's text is
inside its chart, no two texts of a chart overlap, no label is cut short, every chart lies inside the page's main
column. Checked on Chromium's own layout boxes; screenshots go to test-output/screenshots/. The studies are made
up and stored before the dashboard starts (tests/ui/study_samples.py): no sweep or comparison runs."""
from __future__ import annotations

import os

import pytest

from app.experiments.report.html_report import ab_report, sweep_report
from app.experiments.stored import read_sweep
from app.store.database import ExperimentStore
from app.experiments.sweep.sweeper import with_repeats
from app.paths import ROOT
from tests.experiments import samples
from tests.ui import study_samples
from tests.ui.apptest import wait_until
from tests.ui.conftest import _streamlit, app_environ

pytestmark = pytest.mark.browser

SHOTS = ROOT / "test-output" / "screenshots"
WIDTHS = (1280, 1920)
LONG = ("the config serving now", "two instances and a 2 ms queue delay, picked from last week's sweep")

# For each chart: its clipping box, the boxes of its drawn texts (opacity 0: hidden by the axis' overlap rule; empty
# texts and texts of zero size draw nothing), the texts outside the box, the pairs overlapping by more than 1 px each
# way, the texts Vega cut short with '…', and whether the chart lies inside `bounds` (the page's main column).
LAYOUT = """([charts, bounds]) => {
  const frame = bounds ? document.querySelector(bounds).getBoundingClientRect() : null;
  const drawn = t => {
    for (let e = t; e && e.tagName !== 'svg'; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    }
    const b = t.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && t.textContent.trim() !== '';
  };
  return [...document.querySelectorAll(charts)].filter(c => c.getBoundingClientRect().width > 0).map(chart => {
    const box = chart.getBoundingClientRect();
    const texts = [...chart.querySelectorAll('svg text')].filter(drawn).map(t => {
      const b = t.getBoundingClientRect();
      return {text: t.textContent, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom};
    });
    const outside = texts.filter(t => t.x0 < box.left - 1 || t.y0 < box.top - 1 || t.x1 > box.right + 1
                                      || t.y1 > box.bottom + 1).map(t => t.text);
    const overlaps = [];
    texts.forEach((p, i) => texts.slice(i + 1).forEach(q => {
      const w = Math.min(p.x1, q.x1) - Math.max(p.x0, q.x0), h = Math.min(p.y1, q.y1) - Math.max(p.y0, q.y0);
      if (w > 1 && h > 1) overlaps.push([p.text, q.text, Math.round(w), Math.round(h)]);
    }));
    const line = t => t.querySelectorAll('tspan').length
      ? [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' ') : t.textContent;
    const heads = [...chart.querySelectorAll('.role-title-text')]  // the chart's title: the topmost (facets have more)
      .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
    return {title: heads.length ? line(heads[0]) : '', width: Math.round(box.width), height: Math.round(box.height),
            texts: texts.length, outside, overlaps, cut: texts.filter(t => t.text.endsWith('…')).map(t => t.text),
            inside: !frame || (box.left >= frame.left - 1 && box.right <= frame.right + 1)};
  });
}"""


def check_layout(page, charts: str, bounds: str | None, expected: int, what: str) -> list[dict]:
    """Return every chart's layout figures once `expected` charts have drawn their texts; fail naming each text that
    lies outside its chart, overlaps another, or was cut short, and each chart outside the main column."""
    found = wait_until(lambda: (r := page.evaluate(LAYOUT, [charts, bounds])) and len(r) >= expected
                       and all(c["texts"] for c in r) and r, 60, f"{expected} drawn charts in {what}")
    page.wait_for_timeout(500)  # the last chart's re-layout to its width (the figures are then read again)
    found = page.evaluate(LAYOUT, [charts, bounds])
    for chart in found:
        print(f"{what}: {chart['title'] or '(untitled)'} — {chart['width']}×{chart['height']} px, {chart['texts']} "
              f"texts, {len(chart['outside'])} outside, {len(chart['overlaps'])} overlapping, {len(chart['cut'])} cut"
              + ("" if chart["inside"] else ", outside the main column"))
        for name in ("outside", "overlaps", "cut"):
            if chart[name]:
                print(f"  {name}: {chart[name]}")
    bad = [c for c in found if c["outside"] or c["overlaps"] or c["cut"] or not c["inside"]]
    if bad:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"FAILED-{what.replace(' ', '-')}.png"), full_page=True)
    assert not bad, bad
    assert len(found) == expected, [c["title"] for c in found]
    return found


def grow(page, width: int) -> None:
    """Make the viewport as tall as the page (Streamlit scrolls inside its main block), so every chart is laid out
    and the screenshot holds the whole page."""
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                           "[data-testid=stAppViewContainer]')].map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": width, "height": min(int(height) + 40, 12000)})


def shot(page, width: int, name: str) -> None:
    """Screenshot the whole page (its height as drawn now) to test-output/screenshots/<name>.png."""
    grow(page, width)
    page.wait_for_timeout(300)  # let the charts re-lay out to the new height (not an assertion)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """A state folder holding a made-up sweep (its best two within the spread, one point whose repeats disagree) and
    a made-up comparison with long arm names and a caution; and both reports."""
    state = tmp_path_factory.mktemp("screens") / "state"
    store = ExperimentStore(state / "experiments.sqlite")
    space = study_samples.sweep_space()
    points = study_samples.sweep_points(space, study_samples.CLOSE)
    repeats = study_samples.repeat_best(space, points, lower={"i1-d0": 0.3})
    sweep_id = study_samples.store_sweep(store, space, points, repeats, "instances × delay, made up")
    result = samples.ab_result(names=LONG, late={(LONG[1], 2): 0.2})
    ab_id = study_samples.store_ab(store, result, "a made-up comparison")
    study = store.study(sweep_id)
    pooled = with_repeats(store, sweep_id, read_sweep(store, study).points)
    reports = {"sweep": sweep_report(study, pooled, space), "ab": ab_report(store.study(ab_id), result)}
    return state, reports


@pytest.fixture(scope="module")
def screens_dashboard(triton, studies, tmp_path_factory):
    """The dashboard over the session server, its experiment store holding the made-up studies; yield its URL."""
    state, _ = studies
    base = tmp_path_factory.mktemp("screens-dashboard")
    env = {**os.environ, **app_environ(triton, state), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.pop("TBL_VIEWER", None)
    yield from _streamlit(env, base)


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_and_ab_results_draw_every_label_inside_its_chart_with_none_overlapping(screens_dashboard, browser,
                                                                                      width):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(screens_dashboard)  # the entry script first: it sets the wide layout and the navigation
        page.get_by_role("heading", name="Triton Batching Lab", level=1).wait_for(timeout=60_000)
        page.locator('[data-testid="stSidebarNav"] a', has_text="Experiments").click()
        page.get_by_role("heading", name="Experiments", level=1).wait_for(timeout=60_000)
        page.get_by_text("SLA operating point").first.wait_for(timeout=60_000)
        grow(page, width)
        main = '[data-testid="stMainBlockContainer"]'
        charts = '[data-testid="stVegaLiteChart"]'  # those of the open tab: the others have no size
        sweep = check_layout(page, charts, main, 3, f"sweep at {width} px")
        assert [c["title"] for c in sweep] == ["Latency against throughput — gpu_sim",
                                               "Throughput and p99 by load — gpu_sim", "Pareto front — gpu_sim"]
        shot(page, width, f"study-sweep-{width}")
        page.set_viewport_size({"width": width, "height": 1000})
        page.get_by_role("tab", name="A/B comparison").click()
        page.get_by_text("Caution: The load generator fell behind").first.wait_for(timeout=60_000)
        grow(page, width)
        ab = check_layout(page, charts, main, 3, f"A/B at {width} px")
        titles = " | ".join(c["title"] for c in ab)
        assert "B (instances 1 → 2, delay 500 → 2000 µs) against A" in titles and "Every trial" in titles, titles
        shot(page, width, f"study-ab-{width}")
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", ["sweep", "ab"])
def test_a_report_draws_every_label_inside_its_chart_with_none_overlapping(studies, browser, tmp_path, kind, width):
    _, reports = studies
    path = tmp_path / f"{kind}.html"
    path.write_text(reports[kind], encoding="utf-8")
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(path.as_uri(), wait_until="load")
        page.set_viewport_size({"width": width, "height": min(page.evaluate("document.body.scrollHeight") + 40,
                                                               12000)})
        found = check_layout(page, "figure", "body", 3, f"{kind} report at {width} px")
        assert all(c["width"] > 400 for c in found), found
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"study-report-{kind}-{width}.png"), full_page=True)
    finally:
        page.close()
