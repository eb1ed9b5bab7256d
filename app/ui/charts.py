"""Altair charts of the live view; every time chart carries the config-change markers."""
from __future__ import annotations

import altair as alt
import pandas as pd

from app.ui.frames import BREAKDOWN, batch_frame, client_totals, events_frame, series

HEIGHT = 220


def _with_markers(chart: alt.Chart, events: pd.DataFrame) -> alt.LayerChart | alt.Chart:
    if events.empty:
        return chart
    rules = alt.Chart(events).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(x="time:T", tooltip=["label:N", "time:T"])
    # pinned to the plot's top edge in pixels: an offset (dy) pushed them outside and autosize squashed the plot
    labels = alt.Chart(events).mark_text(align="left", baseline="top", dx=3, dy=2, color="#d62728", fontSize=10).encode(
        x="time:T", y=alt.value(0), text="n:N", tooltip=["label:N"])
    return alt.layer(chart, rules, labels)


def _lines(frame: pd.DataFrame, title: str, unit: str, dashed: tuple[str, ...] = ()) -> alt.Chart:
    return alt.Chart(frame, title=title, height=HEIGHT).mark_line(interpolate="monotone").encode(
        x=alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S")),
        y=alt.Y("value:Q", title=unit, axis=alt.Axis(format="~s")),
        color=alt.Color("series:N", legend=alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)),
        strokeDash=alt.condition(alt.FieldOneOfPredicate("series", list(dashed)), alt.value([4, 2]), alt.value([1, 0])),
        tooltip=["series:N", alt.Tooltip("value:Q", format=".1f"), alt.Tooltip("time:T", format="%H:%M:%S")],
    )


def throughput(metrics_rows, load_rows, events) -> alt.Chart:
    """Server inferences/s against client throughput and goodput."""
    frame = pd.concat([
        series(metrics_rows, {"infer_rps": "server infer/s"}),
        series(client_totals(load_rows), {"throughput_rps": "client ok/s", "goodput_rps": "goodput/s (within SLA)"}),
    ])
    return _with_markers(_lines(frame, "Throughput and goodput", "per second", dashed=("server infer/s",)), events_frame(events))


def latency(metrics_rows, load_rows, events) -> alt.Chart:
    """Client p50/p99 (the authority) against the server's 60 s summary quantiles."""
    frame = pd.concat([
        series(client_totals(load_rows), {"p50_ms": "client p50", "p99_ms": "client p99"}),
        series(metrics_rows, {"p50_us": "server p50 (60 s)", "p99_us": "server p99 (60 s)"}, scale=1e-3),
    ])
    dashed = ("server p50 (60 s)", "server p99 (60 s)")
    title = alt.Title("Latency", subtitle="client = load generator (authority); server = 60 s sliding-window summary")
    return _with_markers(_lines(frame, title, "ms", dashed=dashed), events_frame(events))


def breakdown(metrics_rows, events) -> alt.Chart:
    """Stacked per-request queue / compute input / infer / output, in ms."""
    frame = series(metrics_rows, dict(BREAKDOWN), scale=1e-3)
    order = [label for _, label in BREAKDOWN]
    chart = alt.Chart(frame, title="Where a request's server time goes (per request)", height=HEIGHT).mark_area(
        opacity=0.85).encode(
        x=alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S")),
        y=alt.Y("value:Q", stack="zero", title="ms"),
        color=alt.Color("series:N", sort=order, legend=alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)),
        order=alt.Order("series_order:Q"),
        tooltip=["series:N", alt.Tooltip("value:Q", format=".2f"), alt.Tooltip("time:T", format="%H:%M:%S")],
    ).transform_calculate(series_order=f"indexof({order!r}, datum.series)")
    return _with_markers(chart, events_frame(events))


def pending(metrics_rows, events) -> alt.Chart:
    """The pending-request gauge: the queue depth."""
    frame = series(metrics_rows, {"pending": "pending requests", "avg_batch": "average batch size"})
    return _with_markers(_lines(frame, "Queue depth and batch size", "count"), events_frame(events))


def batch_histogram(hist: dict[int, int]) -> alt.Chart:
    """Executions per batch size formed by the scheduler in the window."""
    frame = batch_frame(hist)
    return alt.Chart(frame, title="Batch sizes Triton formed (window)", height=HEIGHT).mark_bar().encode(
        x=alt.X("batch size:O"), y=alt.Y("executions:Q"),
        tooltip=["batch size:O", "executions:Q", alt.Tooltip("share:Q", format=".0%")],
    )


def per_class(load_rows, events) -> alt.Chart:
    """p99 of each traffic class over time, with rejections as bars."""
    rows = [r for r in load_rows if r.get("cls") != "all"]
    frame = pd.DataFrame([
        {"time": pd.Timestamp(r["t"], unit="s", tz="UTC"), "series": f"{r['cls']} p99", "value": r["p99_ms"]}
        for r in rows if r.get("p99_ms") is not None
    ], columns=["time", "series", "value"])
    rejected = pd.DataFrame([
        {"time": pd.Timestamp(r["t"], unit="s", tz="UTC"), "series": f"{r['cls']} rejected/s",
         "value": (r.get("rejected") or 0) + (r.get("timeouts") or 0)}
        for r in rows
    ], columns=["time", "series", "value"])
    lines = _lines(frame, "Per class: p99 (lines), rejected+timeouts/s (bars)", "ms")
    bars = alt.Chart(rejected).mark_bar(opacity=0.4).encode(
        x="time:T", y=alt.Y("value:Q", title="rejected/s", axis=alt.Axis(format="~s")), color=alt.Color("series:N"))
    return _with_markers(alt.layer(lines, bars).resolve_scale(y="independent"), events_frame(events))
