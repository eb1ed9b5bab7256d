"""Altair charts of the live view; every time chart carries the change markers and reload bands."""
from __future__ import annotations

import altair as alt
import pandas as pd

from app.metrics.catalog import BREAKDOWN, label
from app.ui.frames import batch_frame, client_totals, markers_frame, series

HEIGHT = 220
_X = alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S"))


def _with_markers(chart: alt.Chart, markers: pd.DataFrame) -> alt.LayerChart | alt.Chart:
    if markers.empty:
        return chart
    layers = [chart]
    bands = markers.dropna(subset=["end"])
    if not bands.empty:  # reload/restart: from asked to serving again; requests in it are left out of comparisons
        layers.append(alt.Chart(bands).mark_rect(color="#d62728", opacity=0.12).encode(
            x="time:T", x2="end:T", tooltip=["label:N", alt.Tooltip("time:T", format="%H:%M:%S")]))
    layers.append(alt.Chart(markers).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(
        x="time:T", tooltip=["n:N", "label:N", alt.Tooltip("time:T", format="%H:%M:%S")]))
    # pinned to the plot's top edge in pixels: an offset (dy) pushed them outside and autosize squashed the plot
    layers.append(alt.Chart(markers).mark_text(align="left", baseline="top", dx=3, dy=2, color="#d62728",
                                               fontSize=10).encode(x="time:T", y=alt.value(0), text="n:N",
                                                                   tooltip=["label:N"]))
    return alt.layer(*layers)


def _lines(frame: pd.DataFrame, title, unit: str, dashed: tuple[str, ...] = ()) -> alt.Chart:
    return alt.Chart(frame, title=title, height=HEIGHT).mark_line(interpolate="monotone").encode(
        x=_X,
        y=alt.Y("value:Q", title=unit, axis=alt.Axis(format="~s")),
        color=alt.Color("series:N", legend=alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)),
        strokeDash=alt.condition(alt.FieldOneOfPredicate("series", list(dashed)), alt.value([4, 2]), alt.value([1, 0])),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("n:Q", title="samples"),
                 alt.Tooltip("time:T", format="%H:%M:%S")],
    )


def throughput(metrics_rows, load_rows, markers) -> alt.Chart:
    """Server inferences/s against client throughput and goodput."""
    frame = pd.concat([series(metrics_rows, ("infer_rps",)),
                       series(client_totals(load_rows), ("throughput_rps", "goodput_rps"))])
    dashed = (label("infer_rps", False),)
    return _with_markers(_lines(frame, "Throughput and goodput (per second)", "per second", dashed), markers_frame(markers))


def latency(metrics_rows, load_rows, markers, sla_ms: float | None = None) -> alt.Chart:
    """Client p50/p99 per second (the authority) against the server's 60 s summary quantiles, with the SLA."""
    server = ("p50_us", "p99_us")
    frame = pd.concat([series(client_totals(load_rows), ("p50_ms", "p99_ms")), series(metrics_rows, server)])
    cap = spike_cap(frame["value"].tolist(), sla_ms)
    subtitle = ["client: each second's requests (the authority)", "server: 60 s sliding summary"]
    if cap is not None:
        subtitle.append(f"axis capped at {cap:,.0f} ms (a spike reached {frame['value'].max():,.0f} ms)")
    lines = _lines(frame, alt.Title("Latency", subtitle=subtitle), "ms", tuple(label(k, False) for k in server))
    if cap is not None:
        lines = lines.encode(y=alt.Y("value:Q", title="ms", scale=alt.Scale(domain=[0, cap], clamp=True)))
    if sla_ms:
        rule = alt.Chart(pd.DataFrame([{"sla": sla_ms, "label": f"SLA {sla_ms:g} ms"}])).mark_rule(
            color="#2ca02c", strokeDash=[6, 3]).encode(y="sla:Q", tooltip=["label:N"])
        lines = alt.layer(lines, rule)
    return _with_markers(lines, markers_frame(markers))


def spike_cap(values: list[float], sla_ms: float | None = None) -> float | None:
    """Return a y-axis cap when a few spikes would flatten everything else (None when the values are even)."""
    ordered = sorted(v for v in values if v is not None and v == v)  # NaN marks a gap
    if len(ordered) < 10:
        return None
    typical = ordered[int(0.9 * (len(ordered) - 1))]
    cap = max(2.0 * typical, 1.5 * (sla_ms or 0.0))
    return cap if ordered[-1] > 2.0 * cap and cap > 0 else None


def breakdown(metrics_rows, markers) -> alt.Chart:
    """Stacked per-request queue / compute input / infer / output, in ms."""
    frame = series(metrics_rows, BREAKDOWN)
    order = [label(k, False) for k in BREAKDOWN]
    chart = alt.Chart(frame, title="Where a request's server time goes (per request, per second)",
                      height=HEIGHT).mark_area(opacity=0.85).encode(
        x=_X,
        y=alt.Y("value:Q", stack="zero", title="ms"),
        color=alt.Color("series:N", sort=order, legend=alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)),
        order=alt.Order("series_order:Q"),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("time:T", format="%H:%M:%S")],
    ).transform_calculate(series_order=f"indexof({order!r}, datum.series)")
    return _with_markers(chart, markers_frame(markers))


def pending(metrics_rows, markers) -> alt.Chart:
    """The pending-request gauge (queue depth) and the average batch size."""
    frame = series(metrics_rows, ("pending", "avg_batch"))
    return _with_markers(_lines(frame, "Queue depth and batch size", "count"), markers_frame(markers))


def batch_histogram(hist: dict[int, int], window: str) -> alt.Chart:
    """Executions per batch size formed by the scheduler in the window."""
    frame = batch_frame(hist)
    return alt.Chart(frame, title=f"Batch sizes Triton formed ({window})", height=HEIGHT).mark_bar().encode(
        x=alt.X("batch size:O"), y=alt.Y("executions:Q"),
        tooltip=["batch size:O", "executions:Q", alt.Tooltip("share:Q", format=".0%")],
    )


def per_class(load_rows, markers) -> alt.Chart:
    """p99 of each traffic class per second, with rejections and timeouts as bars."""
    rows = [r for r in load_rows if r.get("cls") != "all"]
    p99 = label("p99_ms", False)
    frame = pd.DataFrame([
        {"time": pd.Timestamp(r["t"], unit="s", tz="UTC"), "series": f"{r['cls']}: {p99}", "value": r["p99_ms"],
         "n": r.get("latency_n")}
        for r in rows if r.get("p99_ms") is not None
    ], columns=["time", "series", "value", "n"])
    rejected = pd.DataFrame([
        {"time": pd.Timestamp(r["t"], unit="s", tz="UTC"), "series": f"{r['cls']}: rejected + timeouts/s",
         "value": (r.get("rejected") or 0) + (r.get("timeouts") or 0)}
        for r in rows
    ], columns=["time", "series", "value"])
    lines = _lines(frame, "Per class: p99 (lines), rejected + timeouts/s (bars)", "ms")
    bars = alt.Chart(rejected).mark_bar(opacity=0.4).encode(
        x="time:T", y=alt.Y("value:Q", title="rejected/s", axis=alt.Axis(format="~s")), color=alt.Color("series:N"))
    return _with_markers(alt.layer(lines, bars).resolve_scale(y="independent"), markers_frame(markers))
