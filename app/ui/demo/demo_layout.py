"""/demo for an audience: at 1280×720, without scrolling, the story line, one tall latency chart and four tiles;
the rest of the live lab below.

The page draws a Screen (app.ui.demo.demo_screen), complete before the first element is drawn: the tiles, the
sentences and the latency chart use one window and the diagnosis's one rule, so no sentence shows a number a
tile does not. Every text is escaped (app.ui.text.literal): people's labels and notes are shown as typed.
"""
from __future__ import annotations

import time

import streamlit as st

from app.lab.ports import LabPort
from app.ui.demo.demo_screen import CHART_S, Screen, screen
from app.ui.demo.demo_story import Story
from app.ui.demo.demo_words import Said, Tile
from app.ui.text import literal
from app.ui.demo.viewers import register_viewer

REFRESH_S = 2.0
HELD, NOT_HELD = ":material/check_circle:", ":material/cancel:"  # Streamlit's own icon font: no emoji font needed

# Room for the story, the chart and the tiles on a 720 px projector: less padding, a smaller title, tiles and
# sentences sized to be read from the back of a room.
CSS = """<style>
.block-container, [data-testid="stMainBlockContainer"] {padding-top: 1.2rem; padding-bottom: 2rem;}
[data-testid="stHeader"] {height: 0; min-height: 0;}
h1 {font-size: 1.7rem !important; padding: 0 0 0.2rem 0 !important;}
[data-testid="stMetricValue"] {font-size: 1.9rem;}
[data-testid="stMetricLabel"] p {font-size: 1rem;}
.st-key-demo-story p {font-size: 1.08rem; margin-bottom: 0.2rem;}
.st-key-demo-story [data-testid="stVerticalBlock"] {gap: 0.35rem;}
.st-key-demo-tiles [data-testid="stVerticalBlock"] {gap: 0.6rem;}
.st-key-demo-tiles [data-testid="stMetric"] {border-left: 4px solid #1f77b4; padding-left: 0.8rem;}
</style>"""


def demo_page(lab: LabPort) -> None:
    """Draw /demo: the title, then the screen (which redraws itself every REFRESH_S)."""
    st.html(CSS)
    st.title("Triton Batching Lab — live")
    _screen(lab)


@st.fragment(run_every=REFRESH_S)
def _screen(lab: LabPort) -> None:
    register_viewer()
    shown = screen(lab)  # complete before anything is drawn; shared by every viewer in the same second
    f = shown.frame
    with st.container(key="demo-story"):
        if shown.story is not None:
            _story(shown.story)
        if shown.now is not None:
            _said(shown.now, "**Now:** ")
        if shown.latest is not None:
            marker, said = shown.latest
            _said(said, f"**Latest change** ({_clock(marker.t)}): ")
    chart, side = st.columns([3, 1], gap="medium")
    chart.vega_lite_chart(spec=f.specs["latency"], width="stretch")
    with side.container(key="demo-tiles"):
        for tile in shown.tiles:
            _metric(tile, border=False)
        st.caption(literal(shown.window))
    _below(shown)
    if shown.report_id is not None:
        _report(lab, shown.report_id)


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _said(said: Said, lead: str = "") -> None:
    st.markdown(f"{lead}{literal(said.text)}", help=literal(said.hover) if said.hover else None)


def _metric(tile: Tile, border: bool = True) -> None:
    st.metric(tile.label, tile.value, delta=tile.note or None, delta_color="off", delta_arrow="off",
              help=tile.hover, border=border)


# --- the story line ------------------------------------------------------------------------------------------------
def _story(story: Story) -> None:
    st.markdown(f"**{literal(story.what)}: {literal(story.title)}**")
    if story.claim:
        st.markdown(f"*Claim:* {literal(story.claim)}")
    if story.running:
        _progress(story)
    elif story.verdict is not None:
        _verdict(story)


def _progress(story: Story) -> None:
    total = max(story.total, 1)
    step = min(story.done + 1, total)
    left = f" — about {story.eta_s:,.0f} s left" if story.eta_s else ""
    what = f"phase {step} of {total}: {story.current}" if story.kind == "scenario" else \
        f"{story.done} of {total} measured" + (f" — now {story.current}" if story.current else "")
    st.progress(min(1.0, story.done / total), text=literal(what[:1].upper() + what[1:] + left))
    if story.narration:
        st.info(literal(story.narration))
    done = [p.name for p in story.phases if p.state == "done"]
    if done:
        st.caption("Done: " + " · ".join(f"{HELD} {literal(name)}" for name in done))


def _verdict(story: Story) -> None:
    v = story.verdict
    icon = HELD if v.held else (NOT_HELD if v.held is False else ":material/info:")
    colour = "green" if v.held else ("red" if v.held is False else "blue")
    st.markdown(f":{colour}[{icon} **{literal(v.headline)}**]")
    for c in v.checks:
        mark = f"{HELD} held" if c.ok else f"{NOT_HELD} did not hold"
        bar = f" (needed {literal(c.bar)})" if c.bar else ""
        st.markdown(f"{mark} — {literal(c.sentence)} Measured: **{literal(c.measured)}**{bar}", help=literal(c.hover))
    for line in v.lines:
        st.markdown(literal(line))


# --- below the first screen ----------------------------------------------------------------------------------------
def _below(shown: Screen) -> None:
    f = shown.frame
    st.subheader("More figures of the same window")
    for col, tile in zip(st.columns(len(shown.details)), shown.details):
        with col:
            _metric(tile)
    if not shown.traffic:
        st.caption("No traffic has run yet.")
    elif shown.traffic_running:
        since = _clock(shown.traffic_since) if shown.traffic_since else "—"
        st.info(f"**Running** against {literal(shown.model)} since {since}: {literal(shown.traffic)}.")
    else:
        st.caption(f"Traffic is stopped; the last run sent {literal(shown.traffic)}.")
    if f.running and not f.targeted:
        st.caption(f"The traffic goes to {literal(', '.join(f.targets))}, not to {literal(shown.model)}.")
    c1, c2 = st.columns(2)
    c1.vega_lite_chart(spec=f.specs["throughput"], width="stretch")
    c2.vega_lite_chart(spec=f.specs["breakdown"], width="stretch")
    c3, c4 = st.columns(2)
    c3.vega_lite_chart(spec=f.specs["batches"], width="stretch")
    c4.vega_lite_chart(spec=f.specs["pending"], width="stretch")
    hist = ", ".join(f"{b}×{n:,}" for b, n in sorted(f.batch_hist.items()) if n) or "none yet"
    st.caption(f"Batch sizes formed in the last {CHART_S // 60} min (size×executions): {hist}")
    st.caption(f"Change markers in the window: {len(f.markers)} (the red dashed lines on the charts).")
    for marker, said in shown.changes:
        _said(said, f"{_clock(marker.t)} — ")


def _report(lab: LabPort, study_id: int) -> None:
    from app.ui.demo.demo_story import report_html  # noqa: PLC0415

    try:
        html = report_html(lab, study_id)
    except Exception as exc:  # noqa: BLE001 - a report that cannot be built is said, never a broken page
        st.warning(f"The report of study {study_id} cannot be shown: {literal(type(exc).__name__)}.")
        return
    if html:
        import streamlit.components.v1 as components  # noqa: PLC0415

        st.subheader("The report")
        components.html(html, height=900, scrolling=True)  # its own frame: the report's styles stay inside it
