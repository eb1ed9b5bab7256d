"""The live view: charts of the last minutes, refreshed every second inside a fragment."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.events import impact
from app.lab import Lab
from app.ui import charts

WINDOW_S = 180


def live_view(lab: Lab, model: str, key: str, per_class: bool = False) -> None:
    """Draw the live charts for one model; they refresh every second."""
    window = st.segmented_control("Window", ["1 min", "3 min", "10 min"], default="3 min", key=f"{key}:window") or "3 min"
    seconds = {"1 min": 60, "3 min": 180, "10 min": 600}[window]
    _fragment(lab, model, seconds, per_class)


@st.fragment(run_every=1.0)
def _fragment(lab: Lab, model: str, window_s: int, per_class: bool) -> None:
    since = time.time() - window_s
    msnap = lab.metrics.snapshot(model=model, window_s=window_s)
    lsnap = lab.load.snapshot(window_s=window_s)
    mrows = msnap.timeline
    targets = load_targets(lsnap.spec)
    lrows = [r for r in lsnap.timeline if r["t"] >= since] if model in targets else []
    if lsnap.running and model not in targets:
        st.info(f"Traffic is running against {', '.join(sorted(targets))}, not {model}: client lines are hidden here.")
    events = lab.events.list(model, since) + [e for e in lab.events.list("*", since)]
    if not msnap.up:
        st.warning(f"Server not answering: {msnap.error}")
    _headline(msnap, lsnap if model in targets else None)
    c1, c2 = st.columns(2)
    c1.altair_chart(charts.throughput(mrows, lrows, events), width="stretch")
    c2.altair_chart(charts.latency(mrows, lrows, events), width="stretch")
    c3, c4 = st.columns(2)
    c3.altair_chart(charts.breakdown(mrows, events), width="stretch")
    c4.altair_chart(charts.batch_histogram(msnap.batch_hist), width="stretch")
    hist = ", ".join(f"{b}×{n}" for b, n in sorted(msnap.batch_hist.items()) if n) or "none yet"
    st.caption(f"Batch sizes formed in the window (size×executions): {hist}")
    c5, c6 = st.columns(2)
    c5.altair_chart(charts.pending(mrows, events), width="stretch")
    if per_class or len({r.get("cls") for r in lrows} - {"all"}) > 1:
        c6.altair_chart(charts.per_class(lrows, events), width="stretch")
    _markers(events, mrows, lrows)


def _headline(msnap, lsnap) -> None:
    latest = msnap.latest or {}
    summary = (lsnap.summary or {}).get("all", {}) if lsnap else {}
    gpu = latest.get("gpu_util")
    cols = st.columns(7 if gpu is not None else 6)
    cols[0].metric("server infer/s", _fmt(latest.get("infer_rps"), "{:.0f}"))
    cols[1].metric("avg batch", _fmt(latest.get("avg_batch"), "{:.2f}"))
    cols[2].metric("queue ms/req", _fmt(latest.get("queue_us"), "{:.2f}", 1e-3))
    cols[3].metric("compute ms/req", _fmt(_compute(latest), "{:.2f}", 1e-3))
    cols[4].metric("client p99 ms", _fmt(summary.get("p99_ms"), "{:.1f}"))
    cols[5].metric("traffic", "running" if lsnap and lsnap.running else "stopped")
    if gpu is not None:  # only a GPU server exports nv_gpu_utilization
        cols[6].metric("GPU util", f"{gpu:.0%}", help=f"GPU memory used: {_fmt(latest.get('gpu_mem_bytes'), '{:.2f}', 1e-9)} GB")


def _compute(row: dict) -> float | None:
    parts = [row.get(k) for k in ("compute_input_us", "compute_infer_us", "compute_output_us")]
    return sum(parts) if all(p is not None for p in parts) else None


def _fmt(value, pattern: str, scale: float = 1.0) -> str:
    return "—" if value is None else pattern.format(value * scale)


def _markers(events, mrows, lrows) -> None:
    st.caption(f"Change markers in the window: {len(events)}")
    if not events:
        return
    client = {int(r["t"]): r.get("p99_ms") for r in lrows if r.get("cls") == "all"}  # load rows are whole seconds
    rows = [{**r, "p99_ms": client.get(int(r["t"]))} for r in mrows]
    table = []
    for n, e in list(enumerate(events, 1))[-6:]:
        result = impact(e, rows)
        table.append({
            "#": n, "time": time.strftime("%H:%M:%S", time.localtime(e.t)), "change": e.text,
            **{f"{_LABELS[k]} before→after": _pair(v) for k, v in result.items()},
        })
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")


_LABELS = {"infer_rps": "infer/s", "avg_batch": "batch", "queue_us": "queue µs", "compute_infer_us": "infer µs",
           "p99_ms": "client p99 ms"}


def load_targets(spec) -> set[str]:
    """Return the models a load spec sends to."""
    if spec is None:
        return set()
    return {spec.model, *(c.model or spec.model for c in spec.classes), *(s.model for s in spec.sequences)}


def _pair(values) -> str:
    before, after = values
    f = lambda v: "…" if v is None else f"{v:.1f}"  # noqa: E731
    return f"{f(before)} → {f(after)}"
