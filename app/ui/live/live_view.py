"""The live view: window tiles, per-second charts and the change markers, redrawn every 2 s under traffic."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.timeline.figures import IMPACT_KEYS, Figures
from app.lab.ports import LabPort
from app.metrics.catalog import MIN_SAMPLES, fmt, label, metric
from app.ui.access import guarded
from app.ui.traffic.failures import failing_alert
from app.ui.live.live_frame import LiveFrame, frame
from loadgen.stats import ALL

WINDOWS = {"1 min": 60, "3 min": 180, "10 min": 600, "15 min (all kept)": 900}


def live_view(lab: LabPort, model: str, key: str, per_class: bool = False, controls: bool = True) -> None:
    """Draw the live tiles and charts of one model; they redraw themselves (controls=False: demo, no widgets)."""
    window, paused_at = "3 min", None
    if controls:
        c1, c2 = st.columns([4, 1])
        window = c1.segmented_control("Chart window", list(WINDOWS), default="3 min", key=f"{key}:window") or "3 min"
        if c2.toggle("Pause", key=f"{key}:pause", help="freeze the charts to read them; drag to pan, scroll to zoom"):
            paused_at = st.session_state.setdefault(f"{key}:paused_at", time.time())
        else:
            st.session_state.pop(f"{key}:paused_at", None)
    busy = lab.traffic().running or any(m.band and m.end is None for m in lab.markers(model, time.time() - 60))
    refresh = _live if busy and paused_at is None else _quiet  # nothing moving: redraw less often
    refresh(lab, model, WINDOWS[window], per_class, wide=not controls, paused_at=paused_at)


LIVE_S, QUIET_S = 2.0, 5.0  # refresh while traffic runs (or a reload is under way) / otherwise


def _view(lab: LabPort, model: str, window_s: int, per_class: bool, wide: bool = False,
          paused_at: float | None = None) -> None:
    f = frame(lab, model, window_s, per_class, paused_at)  # computed once per tick for every session
    if paused_at:
        st.caption(f"Paused at {time.strftime('%H:%M:%S', time.localtime(paused_at))}: drag a chart to pan, "
                   "scroll to zoom; switch Pause off to follow live.")
    if f.running and not f.targeted:
        st.info(f"Traffic is running against {', '.join(f.targets)}, not {model}: client lines are hidden here.")
    if not f.up:
        st.warning(f"Server not answering: {guarded(f.error)}")
    failing = failing_alert(*f.tile.failures(), f.tile.latest_error(), f.tile.describe())
    if failing:
        st.warning(failing)
    draw_tiles(f.tile, running=f.running and f.targeted)
    pair = (lambda: [st.container(), st.container()]) if wide else (lambda: st.columns(2))  # demo: one per row
    c1, c2 = pair()
    c1.vega_lite_chart(spec=f.specs["throughput"], width="stretch")
    c2.vega_lite_chart(spec=f.specs["latency"], width="stretch")
    c3, c4 = pair()
    c3.vega_lite_chart(spec=f.specs["breakdown"], width="stretch")
    c4.vega_lite_chart(spec=f.specs["batches"], width="stretch")
    hist = ", ".join(f"{b}×{n:,}" for b, n in sorted(f.batch_hist.items()) if n) or "none yet"
    st.caption(f"Batch sizes formed in the last {window_s // 60} min (size×executions): {hist}")
    c5, c6 = pair()
    c5.vega_lite_chart(spec=f.specs["pending"], width="stretch")
    if "per_class" in f.specs:
        c6.vega_lite_chart(spec=f.specs["per_class"], width="stretch")
    markers_table(f)


_live = st.fragment(run_every=LIVE_S)(_view)
_quiet = st.fragment(run_every=QUIET_S)(_view)


def p99_text(figures: Figures, cls: str = ALL) -> str:
    """Return a client p99 with its window and sample count, marked when too few samples back it."""
    value, n = figures.get("p99_ms", cls), figures.samples(cls)
    if value is None:
        return f"— ({figures.describe()}, no answers)"
    warn = f", few samples: < {MIN_SAMPLES}" if not figures.trusted("p99_ms", cls) else ""
    return f"{fmt('p99_ms', value)} ({figures.describe()}, n={n:,}{warn})"


def draw_tiles(figures: Figures, running: bool) -> None:
    """The headline figures of the window (counter differences and merged latencies)."""
    window = figures.describe()
    gpu = figures.get("gpu_util")
    keys = ("infer_rps", "avg_batch", "queue_us", "compute_us")
    cols = st.columns(len(keys) + 3 + (gpu is not None))
    for col, key in zip(cols, keys):
        col.metric(label(key), fmt(key, figures.get(key), unit=False), help=f"{metric(key).description} Window: {window}.")
    n = figures.samples()
    p99 = figures.get("p99_ms")
    cols[len(keys)].metric(
        label("p99_ms"), fmt("p99_ms", p99, unit=False),
        delta=f"{window} · n={n:,}" + ("" if figures.trusted("p99_ms") or p99 is None else " · few samples"),
        delta_color="off", help=f"Every successful request of the window, merged: the window's true p99. "
                                f"Fewer than {MIN_SAMPLES} samples is marked.")
    failed, ended = figures.failures()
    cols[len(keys) + 1].metric(
        label("failed_share"), fmt("failed_share", failed / ended if ended else None, unit=False),
        delta=f"{failed:,} of {ended:,}" if failed else None, delta_color="inverse",
        help=f"{metric('failed_share').description} Window: {window}.")
    cols[len(keys) + 2].metric("traffic", "running" if running else "stopped")
    if gpu is not None:  # only a GPU server exports nv_gpu_utilization
        cols[-1].metric(label("gpu_util"), fmt("gpu_util", gpu, unit=False),
                        help=f"GPU memory used: {fmt('gpu_mem_bytes', figures.get('gpu_mem_bytes'))}")
    if figures.get("responses"):  # a decoupled model: what its clients see is a stream of answers
        streamed = ("responses_rps", "first_p50_ms", "first_p99_ms", "gap_p50_ms")
        for col, key in zip(st.columns(len(streamed)), streamed):
            col.metric(label(key), fmt(key, figures.get(key), unit=False),
                       help=f"{metric(key).description} Window: {window}.")


def markers_table(f: LiveFrame) -> None:
    """Before/after figures of each change: the 10 s before it was asked for, the 10 s after it served."""
    st.caption(f"Change markers in the window: {len(f.markers)} · before = 10 s before the change was asked for; "
               "after = 10 s from 1 s after it served; requests held by a reload are left out.")
    if not f.markers:
        return
    table = []
    for m, result in f.impacts:
        before, after = result["before"], result["after"]
        reload = f"{m.end - m.t:.1f} s" if m.band and m.end is not None else ("under way" if m.band else "—")
        table.append({
            "#": m.id, "time": time.strftime("%H:%M:%S", time.localtime(m.t)), "change": m.text, "reload": reload,
            **{f"{label(k)} before → after": _pair(k, before, after) for k in IMPACT_KEYS},
        })
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")


def _pair(key: str, before: Figures, after: Figures | None) -> str:
    def one(figures: Figures | None) -> str:
        if figures is None:
            return "…"
        text = fmt(key, figures.get(key), unit=False)
        if metric(key).percentile and figures.get(key) is not None:
            text += f" (n={figures.samples():,}{'' if figures.trusted(key) else ', few'})"
        return text
    return f"{one(before)} → {one(after)}"
