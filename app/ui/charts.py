"""The live view's charts: each kind's Vega-Lite specification is built once; every refresh sends only data.

Building and validating an Altair chart every second was most of the dashboard's CPU; the templates
refer to named datasets (main, markers, bands, ...) that each refresh fills in.
"""
from __future__ import annotations

import copy
from functools import lru_cache

import altair as alt

from app.metrics.catalog import BREAKDOWN, label
from app.ui.frames import band_records, batch_records, client_totals, marker_records, series

HEIGHT = 220
RED = "#d62728"


def _x() -> alt.X:
    return alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S"))


def _legend() -> alt.Legend:
    return alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)


def _marker_layers() -> list:
    bands = alt.Chart(alt.NamedData("bands")).mark_rect(color=RED, opacity=0.12).encode(
        x="time:T", x2="end:T", tooltip=["label:N", alt.Tooltip("time:T", format="%H:%M:%S")])
    rules = alt.Chart(alt.NamedData("markers")).mark_rule(color=RED, strokeDash=[4, 3]).encode(
        x="time:T", tooltip=["n:N", "label:N", alt.Tooltip("time:T", format="%H:%M:%S")])
    # pinned to the plot's top edge in pixels: an offset (dy) pushed them outside and autosize squashed the plot
    labels = alt.Chart(alt.NamedData("markers")).mark_text(
        align="left", baseline="top", dx=3, dy=2, color=RED, fontSize=10).encode(
        x="time:T", y=alt.value(0), text="n:N", tooltip=["label:N"])
    return [bands, rules, labels]


def _lines(title, unit: str, dashed: tuple[str, ...] = (), data: str = "main") -> alt.Chart:
    return alt.Chart(alt.NamedData(data), title=title, height=HEIGHT).mark_line(interpolate="monotone").encode(
        x=_x(),
        y=alt.Y("value:Q", title=unit, axis=alt.Axis(format="~s")),
        color=alt.Color("series:N", legend=_legend()),
        strokeDash=alt.condition(alt.FieldOneOfPredicate("series", list(dashed)), alt.value([4, 2]), alt.value([1, 0])),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("n:Q", title="samples"),
                 alt.Tooltip("time:T", format="%H:%M:%S")],
    )


def _breakdown_area() -> alt.Chart:
    order = [label(k, False) for k in BREAKDOWN]
    return alt.Chart(alt.NamedData("main"), title="Where a request's server time goes (per request, per second)",
                     height=HEIGHT).mark_area(opacity=0.85).encode(
        x=_x(), y=alt.Y("value:Q", stack="zero", title="ms"),
        color=alt.Color("series:N", sort=order, legend=_legend()),
        order=alt.Order("series_order:Q"),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("time:T", format="%H:%M:%S")],
    ).transform_calculate(series_order=f"indexof({order!r}, datum.series)")


def _per_class() -> alt.LayerChart:
    lines = _lines("Per class: p99 (lines), rejected + timeouts/s (bars)", "ms")
    bars = alt.Chart(alt.NamedData("bars")).mark_bar(opacity=0.4).encode(
        x="time:T", y=alt.Y("value:Q", title="rejected/s", axis=alt.Axis(format="~s"),
                            scale=alt.Scale(domain={"unionWith": [0, 1]})),  # all zero: 0..1, not NaN
        color=alt.Color("series:N"))
    return alt.layer(lines, bars).resolve_scale(y="independent")


SERVER_QUANTILES = ("p50_us", "p99_us")
_BUILDERS = {
    "throughput": lambda: _lines("Throughput and goodput (per second)", "per second", (label("infer_rps", False),)),
    "latency": lambda: alt.layer(
        _lines(alt.Title("Latency", subtitle=[""]), "ms", tuple(label(k, False) for k in SERVER_QUANTILES)),
        alt.Chart(alt.NamedData("sla")).mark_rule(color="#2ca02c", strokeDash=[6, 3]).encode(
            y="sla:Q", tooltip=["label:N"])),
    "breakdown": _breakdown_area,
    "pending": lambda: _lines("Queue depth and batch size", "count"),
    "per_class": _per_class,
}


@lru_cache(maxsize=None)
def template(kind: str, zoom: bool = False) -> dict:
    """Return the Vega-Lite spec of a chart kind with named, empty datasets (built once per process)."""
    if kind == "batch_histogram":
        chart = alt.Chart(alt.NamedData("main"), title="Batch sizes Triton formed", height=HEIGHT).mark_bar().encode(
            x=alt.X("batch size:O"), y=alt.Y("executions:Q"),
            tooltip=["batch size:O", "executions:Q", alt.Tooltip("share:Q", format=".0%")])
    else:
        chart = alt.layer(_BUILDERS[kind](), *_marker_layers())
        if zoom:
            chart = chart.interactive(bind_y=False)
    return chart.to_dict(validate=False)  # tests validate each template once against the schema


def _spec(kind: str, zoom: bool, markers, **datasets) -> dict:
    spec = copy.deepcopy(template(kind, zoom))
    if markers is not None:
        datasets.update(markers=marker_records(markers), bands=band_records(markers))
    spec["datasets"] = datasets
    return spec


def throughput(metrics_rows, load_rows, markers, zoom: bool = False) -> dict:
    """Server inferences/s against client throughput and goodput."""
    main = series(metrics_rows, ("infer_rps",)) + series(client_totals(load_rows), ("throughput_rps", "goodput_rps"))
    return _spec("throughput", zoom, markers, main=main)


def latency(metrics_rows, load_rows, markers, sla_ms: float | None = None, zoom: bool = False) -> dict:
    """Client p50/p99 per second (the authority) against the server's 60 s summary quantiles, with the SLA."""
    main = series(client_totals(load_rows), ("p50_ms", "p99_ms")) + series(metrics_rows, SERVER_QUANTILES)
    values = [r["value"] for r in main if r["value"] is not None]
    cap = spike_cap(values, sla_ms)
    subtitle = ["client: each second's requests (the authority)", "server: 60 s sliding summary"]
    spec = _spec("latency", zoom, markers, main=main,
                 sla=[{"sla": sla_ms, "label": f"SLA {sla_ms:g} ms"}] if sla_ms else [])
    lines = spec["layer"][0]["layer"][0]
    if cap is not None:
        subtitle.append(f"axis capped at {cap:,.0f} ms (a spike reached {max(values):,.0f} ms)")
        lines["encoding"]["y"]["scale"] = {"domain": [0, cap], "clamp": True}
    lines["title"] = {"text": "Latency", "subtitle": subtitle}
    return spec


def spike_cap(values: list[float], sla_ms: float | None = None) -> float | None:
    """Return a y-axis cap when a few spikes would flatten everything else (None when the values are even)."""
    ordered = sorted(v for v in values if v is not None and v == v)  # NaN marks a gap
    if len(ordered) < 10:
        return None
    typical = ordered[int(0.9 * (len(ordered) - 1))]
    cap = max(2.0 * typical, 1.5 * (sla_ms or 0.0))
    return cap if ordered[-1] > 2.0 * cap and cap > 0 else None


def breakdown(metrics_rows, markers, zoom: bool = False) -> dict:
    """Stacked per-request queue / compute input / infer / output, in ms."""
    return _spec("breakdown", zoom, markers, main=series(metrics_rows, BREAKDOWN))


def pending(metrics_rows, markers, zoom: bool = False) -> dict:
    """The pending-request gauge (queue depth) and the average batch size."""
    return _spec("pending", zoom, markers, main=series(metrics_rows, ("pending", "avg_batch")))


def batch_histogram(hist: dict[int, int], window: str) -> dict:
    """Executions per batch size formed by the scheduler in the window."""
    spec = _spec("batch_histogram", False, None, main=batch_records(hist))
    spec["title"] = f"Batch sizes Triton formed ({window})"
    return spec


def per_class(load_rows, markers, zoom: bool = False) -> dict:
    """p99 of each traffic class per second, with rejections and timeouts as bars."""
    rows = [r for r in load_rows if r.get("cls") != "all"]
    p99 = label("p99_ms", False)
    main = [{"time": r["t"] * 1000.0, "series": f"{r['cls']}: {p99}", "value": r["p99_ms"], "n": r.get("latency_n")}
            for r in rows if r.get("p99_ms") is not None]
    bars = [{"time": r["t"] * 1000.0, "series": f"{r['cls']}: rejected + timeouts/s",
             "value": (r.get("rejected") or 0) + (r.get("timeouts") or 0)} for r in rows]
    return _spec("per_class", zoom, markers, main=main, bars=bars)
