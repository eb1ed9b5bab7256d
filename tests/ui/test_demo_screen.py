"""/demo for an audience: the page's words and escaping (AppTest, in-process lab), the presenter's choice, and the
projector screens in a real Chromium — idle, during a guided scenario and after its verdict, at 1280×720 and
1920×1080 — with the latency chart's height and ticks, clipped text and stray raw values checked."""
from __future__ import annotations

import re
import time
from contextlib import contextmanager

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from app.store.database import DONE, Study
from app.paths import ROOT
from app.ui.demo import presenter
from tests.ui.apptest import ok, open_page, shown, wait_until
from tests.ui.conftest import remote_dashboard

HOSTILE = "[x](http://example.invalid) <img src=http://example.invalid/a.png> **b** $x$ :red[y]"
RAW = re.compile(r"\bNaN\b|\bNone\b|\bnull\b|\bundefined\b|\d\.\d{4,}|0\.000000")
SHOTS = ROOT / "test-output" / "screenshots"
NUMBER = re.compile(r"(?:under )?\d[\d,]*(?:\.\d+)? ?(?:%|ms|req/s|infer/s)?")


@pytest.fixture
def choice():
    """The presenter's choice, back to following the lab after the test (it is the process's)."""
    yield presenter
    presenter.choose(presenter.AUTO)


def _texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]


def test_a_notes_text_reaches_the_demo_as_typed(lab, choice):
    choice.choose(presenter.LIVE)
    model = lab.traffic().spec.model if lab.traffic().spec is not None else "gpu_sim"  # the model /demo follows
    lab.mark(model, "note", HOSTILE)
    at = open_page("lab_pages/demo.py")
    lines = [m.value for m in at.markdown if "Latest change" in m.value]
    assert lines, _texts(at)
    source = lines[0]
    print(f"Markdown source: {source!r}")
    assert HOSTILE in shown(source) and not re.search(r"#\d", shown(source)), source  # as typed, no marker number
    for raw in ("[x](", "<img", "**b**", "$x$", ":red["):  # each mark of it preceded by a backslash
        assert not re.search(r"(?<!\\)" + re.escape(raw), source), f"{raw!r} reaches Markdown unescaped: {source!r}"
    html = MarkdownIt("commonmark").render(source)
    assert "<a " not in html and "<img" not in html and "<strong>b</strong>" not in html, html
    words = " ".join(_texts(at))
    assert "127.0.0.1:" not in words and "http://" not in words.replace("http://example.invalid", ""), words


def test_a_stored_verdict_chosen_by_the_presenter_is_said_in_plain_sentences(lab, choice):
    """A stored scenario whose checks carry raw floats and a missing figure: /demo says each check in one sentence
    with its number at a sensible precision, never 'None' or '44.9596'."""
    sid = lab.add_study(Study("scenario", "Queue delay at low and high load", "gpu_sim", {
        "scenario": "queue-delay", "full": False, "expect": "At low load the delay is added latency.",
        "phases": [{"name": "low load, delay 0 µs"}, {"name": "low load, delay 10000 µs"}]}, time.time()))
    checks = [
        {"claim": "at low load the 10 ms delay adds about itself to the median",
         "measured": "p50 increase ÷ 10 ms = 9.8123 / 10.0 = 0.981234", "margin": "≥ 0.6 (measured 0.98-1.00)",
         "ok": True},
        {"claim": "high load batches are larger", "measured": "average batch = None / 1.0 = 44.9596",
         "margin": "≥ 1.5", "ok": False}]
    lab.update_study(sid, status=DONE, result={"passed": False, "checks": checks})
    choice.choose(presenter.STUDY, sid)
    try:  # the study goes with the test: a failed claim left in the store is an st.error on its page for others
        at = open_page("lab_pages/demo.py")
    finally:
        lab.delete_study(sid)
    words = _texts(at)
    print("\n".join(words))
    said = [shown(w).replace("**", "") for w in words]
    assert any("The claim did not hold: 1 of 2 checks passed." in w for w in said), said
    assert any("At low load the 10 ms delay adds about itself to the median. Measured: 0.98 (needed ≥ 0.6)" in w
               for w in said), said
    assert any("High load batches are larger. Measured: 44.96 (needed ≥ 1.5)" in w for w in said), said
    assert not [w for w in words if RAW.search(shown(w))], [w for w in words if RAW.search(shown(w))]
    assert "Claim:" in " ".join(words) and "At low load the delay is added latency." in " ".join(shown(w) for w in words)


def _panel(lab) -> None:
    from app.ui.demo.presenter import presenter_panel  # noqa: PLC0415 - the script runs on its own

    presenter_panel(lab)


def test_the_presenter_panel_sets_what_every_demo_viewer_follows(lab, choice):
    at = ok(AppTest.from_function(_panel, args=(lab,), default_timeout=30).run())
    box = at.selectbox[0]
    assert box.label == "What /demo shows" and box.value == 0  # following the lab
    print(box.options)
    assert box.options[:2] == ["The lab, with the running study and its verdict", "The live lab only"], box.options
    ok(box.set_value(1).run())  # the live lab only
    assert presenter.current().kind == presenter.LIVE
    again = ok(AppTest.from_function(_panel, args=(lab,), default_timeout=30).run())  # another operator's session
    assert again.selectbox[0].value == 1


# --- the projector screens in Chromium ------------------------------------------------------------------------------
SCENARIO = "Instances × batching"  # two phases of 8 s at full length: a story, a progress bar and a verdict in ~30 s

PROBE = """(viewport) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                  right: r.right, height: r.height}; };
  const chart = document.querySelector('[data-testid="stVegaLiteChart"]');
  const state = document.querySelector('[data-test-script-state]');
  const out = {text: main.innerText, svgText: [], chart: null, plot: 0, ticks: [], tiles: [], clipped: [],
               story: null, running: state ? state.getAttribute('data-test-script-state') : null,
               now: [...main.querySelectorAll('[data-testid="stMarkdownContainer"]')].map(m => m.innerText)
                    .filter(t => t.startsWith('Now:')),
               values: [...main.querySelectorAll('[data-testid="stMetricValue"]')].map(v => v.innerText.trim())};
  if (chart) {
    out.chart = box(chart);
    out.plot = Math.max(0, ...[...chart.querySelectorAll('path.background')].map(p => p.getBoundingClientRect().height));
    const y = chart.querySelector('g[aria-label^="Y-axis"]');
    out.ticks = y ? [...y.querySelectorAll('.role-axis-label text')].map(t => t.textContent) : [];
  }
  out.svgText = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg text')].map(t => t.textContent);
  const story = document.querySelector('.st-key-demo-story');
  out.story = story ? box(story) : null;
  out.tiles = [...document.querySelectorAll('.st-key-demo-tiles [data-testid="stMetric"]')].map(box);
  for (const e of main.querySelectorAll('*')) {  // text cut short: an ellipsis or a hidden overflow, measured exactly
    if (e.closest('[data-testid="stVegaLiteChart"]')) continue;
    const cs = getComputedStyle(e);
    if (cs.textOverflow !== 'ellipsis' && !(cs.overflowX === 'hidden' && cs.whiteSpace === 'nowrap')) continue;
    const range = document.createRange(); range.selectNodeContents(e);
    const r = e.getBoundingClientRect();
    if (r.width > 0 && range.getBoundingClientRect().width > r.width + 0.01) out.clipped.push(e.innerText.slice(0, 60));
  }
  return out;
}"""


def _overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def check_screen(page, name: str, height: int, data: bool) -> dict:
    """Check one /demo screen as the audience sees it (no scrolling); save its screenshot; return what was read."""
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    # read between two redraws (one evaluate is atomic): a redraw under way shows some elements old, some new. The
    # script state alone did not prove it (ddc3789's run read a "Now:" sentence of one window beside tiles of the
    # next while it said notRunning): two reads in a row that agree, 0.25 s apart, are one redraw's
    reads: list[dict] = []

    def settled() -> dict | None:
        reads.append(page.evaluate(PROBE, height))
        last = reads[-2:]
        return (len(last) == 2 and all(r["running"] == "notRunning" for r in last)
                and last[0]["text"] == last[1]["text"] and last[0]["values"] == last[1]["values"]
                and (not data or len(last[1]["ticks"]) >= 3) and last[1]) or None

    # 90 s: in a first pass that runs beside the quiet pass (scripts/lab.sh: an idle cgroup) a page under a live
    # scenario redrew for 30 s without a pause of 0.25 s (long tasks of 2-7 s in every 5 s). With data, a reading
    # with values on the y axis: in a suite run (ci124) the scenario's screen, once the wait below had seen three,
    # settled for a moment on a chart without any
    seen = wait_until(settled, 90, f"{name}: the screen between two redraws, read twice alike")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    summary = {k: seen[k] for k in ("chart", "plot", "ticks", "story", "tiles", "clipped")}
    print(name, summary)
    assert not page.locator('[data-testid="stException"]').count(), f"{name}: an exception on /demo"
    words = seen["text"] + "\n" + "\n".join(seen["svgText"])
    assert not RAW.search(words), f"{name}: raw value {RAW.search(words).group(0)!r} in {words[:2000]!r}"
    assert not [t for t in seen["svgText"] if "…" in t], f"{name}: a chart label cut short: {seen['svgText']}"
    assert not seen["clipped"], f"{name}: text cut short: {seen['clipped']}"
    assert seen["story"] and seen["story"]["bottom"] <= height, f"{name}: the story line below the first screen"
    assert seen["chart"] and seen["chart"]["bottom"] <= height, f"{name}: the latency chart below the first screen"
    assert all(t["bottom"] <= height for t in seen["tiles"]) and len(seen["tiles"]) == 4, f"{name}: {seen['tiles']}"
    boxes = seen["tiles"] + [seen["chart"]]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlap(a, b)], f"{name}: overlap"
    assert seen["plot"] >= 240, f"{name}: the latency plot is {seen['plot']:.0f} px high"
    for sentence in seen["now"]:  # every number the sentence says is a tile's, from the same window
        said = [n.strip() for n in NUMBER.findall(sentence.removeprefix("Now:"))]
        assert all(n in seen["values"] for n in said), f"{name}: {sentence!r} says {said}; the tiles: {seen['values']}"
    if data:
        assert len(seen["ticks"]) >= 3, f"{name}: y ticks {seen['ticks']}"
        assert any(t.startswith("SLA ") for t in seen["svgText"]), f"{name}: the SLA line is not labelled"
    else:
        assert "no traffic yet" in seen["svgText"], f"{name}: an idle chart must say so: {seen['svgText']}"
    return seen


@pytest.fixture(scope="module")
def demo_dashboard(triton, tmp_path_factory):
    """A dashboard of its own (no traffic has run in it: the idle screen is idle) against the session server."""
    yield from remote_dashboard(triton, tmp_path_factory.mktemp("demo-dashboard"))


def _wait_drawn(page) -> None:
    page.get_by_role("heading", name="Triton Batching Lab — live", level=1).wait_for(timeout=60_000)
    wait_until(lambda: page.locator('[data-testid="stVegaLiteChart"] svg').count() >= 5, 60, "the demo's charts")


@contextmanager
def frozen(pages):
    """Freeze pages (no script, timer or redraw runs in them) for the block; thaw them after it."""
    sessions = [p.context.new_cdp_session(p) for p in pages]
    for cdp in sessions:
        cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    try:
        yield
    finally:
        for cdp in sessions:
            cdp.send("Page.setWebLifecycleState", {"state": "active"})
            cdp.detach()


@pytest.mark.browser
@pytest.mark.timeout(900)  # three pages and a scenario, each wait bounded: 55-75 s alone (beside stress-ng --cpu 8),
# 270 s and past the suite's 300 s default in a first pass on a slow 2-core host, 278 s under a 1.1-CPU quota
def test_the_projector_screens_idle_during_a_scenario_and_after_its_verdict(demo_dashboard, browser, restore_model):
    restore_model("gpu_sim")
    operator = browser.new_page(viewport={"width": 1400, "height": 1000})
    screens = {}
    try:
        operator.goto(demo_dashboard)  # the lab's own navigation first (issue 26 item 6 is another engineer's)
        operator.get_by_role("heading", name="Triton Batching Lab", level=1).wait_for(timeout=60_000)
        for w, h in ((1280, 720), (1920, 1080)):
            screens[(w, h)] = page = browser.new_page(viewport={"width": w, "height": h})
            page.goto(f"{demo_dashboard}/demo")
            _wait_drawn(page)
        wait_until(lambda: all("Now: no traffic is running." in p.locator('[data-testid="stMain"]').inner_text()
                               for p in screens.values()), 30, "the idle story line")
        for (w, h), page in screens.items():
            check_screen(page, f"demo_idle_{w}x{h}", h, data=False)

        # the screens stay open, frozen while the operator's page draws and is clicked (their redraws beside it on a
        # starved host kept that page's main thread busy past a click's 60 s: the render log, 2026-12-02); thawed,
        # they go on from where they were, as a projector's tab does
        with frozen(screens.values()):
            operator.goto(f"{demo_dashboard}/dynamic_batching")
            operator.get_by_role("heading", name="Dynamic batching", level=1).wait_for(timeout=60_000)
            # the whole first draw before the click: elements still arriving above the expander moved it under the
            # pointer (a CI run: "stHorizontalBlock ... intercepts pointer events")
            wait_until(lambda: operator.locator('[data-test-script-state="notRunning"]').count(), 120,
                       "the operator's page to finish its first draw")
            scenario = operator.locator('[data-testid="stExpander"]', has_text=SCENARIO)
            scenario.locator("summary").click(timeout=120_000)
            # full length: the screens, thawed only after the Run click, must still find the scenario running. Its
            # shortened phases (3 s each) had ended before a thawed screen beside stress-ng drew again (ci105, once
            # the session server's reloads took 0.1 s instead of 1.4 s); either phase is the screen under test
            full = scenario.get_by_role("checkbox", name=re.compile(r"^Full length"))
            pressed = []

            # a Space key press on the box itself (in ci120 a click on its label was handled and left it unticked);
            # pressed again only while unticked 20 s after the last press, which returns once the page handled it
            def ticked():
                if full.is_checked():
                    return True
                if not pressed or time.monotonic() - pressed[-1] > 20:
                    full.press("Space", timeout=60_000)
                    pressed.append(time.monotonic())
                return False

            wait_until(ticked, 120, "the Full length box ticked")
            wait_until(lambda: operator.locator('[data-test-script-state="notRunning"]').count(), 120,
                       "the operator's page to draw the ticked box")
            print("key presses to tick the box:", len(pressed))
            scenario.get_by_role("button", name=re.compile(r"^Run")).click(timeout=120_000)

        def running_with_answers(page):  # a phase's progress, and a y axis with values (check_screen wants three)
            progress = page.locator('[data-testid="stProgress"]')
            return (progress.count() and re.search(r"Phase [12] of 2", progress.inner_text()) and page.locator(
                '[data-testid="stVegaLiteChart"] g[aria-label^="Y-axis"] .role-axis-label text').count() >= 3)

        wait_until(lambda: all(running_with_answers(p) for p in screens.values()), 90,
                   "a phase of the scenario, with answers on the chart, on every screen")
        for (w, h), page in screens.items():
            seen = check_screen(page, f"demo_scenario_{w}x{h}", h, data=True)
            assert "Claim:" in seen["text"] and "Guided scenario" in seen["text"], seen["text"][:500]

        verdict = re.compile(r"The claim (held|did not hold)")
        wait_until(lambda: all(verdict.search(p.locator('[data-testid="stMain"]').inner_text())
                               for p in screens.values()), 120, "the verdict on every demo screen")
        for (w, h), page in screens.items():
            seen = check_screen(page, f"demo_verdict_{w}x{h}", h, data=True)
            lines = [line for line in seen["text"].splitlines() if "Measured:" in line]
            assert lines and all(re.search(r"Measured: -?[\d,.]+", line) for line in lines), lines
        print("verdict:", [line for line in seen["text"].splitlines() if "held" in line or "Measured" in line])
    finally:
        for page in screens.values():
            page.close()
        operator.close()
