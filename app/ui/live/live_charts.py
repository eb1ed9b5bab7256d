"""The live view's charts: each kind's Vega-Lite specification is built once; every refresh sends only data.

Building and validating an Altair chart every second was most of the dashboard's CPU; the templates
refer to named datasets (main, markers, bands, ...) that each refresh fills in. Each kind comes in the
operator's words and in an audience's (audience=True: /demo, the catalog's presenter labels); a chart with
nothing to draw says "no traffic yet" instead of showing an empty, unlabelled axis.
"""
from __future__ import annotations

import copy
from functools import lru_cache

import altair as alt

from app.metrics.catalog import BREAKDOWN, label, presenter_label
from app.ui.live.chart_rows import band_records, batch_records, client_totals, marker_records, series
from loadgen.stats import ALL

HEIGHT = 220
DEMO_HEIGHT = 370  # the demo's one latency chart: Streamlit fits title, legend and axes inside it (plot ≈ 260 px)
RED = "#d62728"
GREEN = "#2ca02c"
IDLE = "no traffic yet"
WAITING = "waiting for the first answers"  # traffic runs, no second of answers has ended yet
AXIS_FORMAT = ",.3~r"  # 0.25, 12, 1,500: never "250m" (SI) for a quarter of a millisecond
TRACE_SERIES = "trace (played)"  # the throughput chart's step line of a rate trace's played rate


def name(key: str, audience: bool = False) -> str:
    """Return a figure's series name: the operator's label, or the presenter's words for an audience."""
    return presenter_label(key) if audience else label(key, False)


def _x() -> alt.X:
    return alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S"))


def _legend(audience: bool = False) -> alt.Legend:
    if audience:  # beside the plot: on a 720 px screen the height is what the lines need
        return alt.Legend(orient="right", title=None, labelLimit=220, labelFontSize=13, symbolStrokeWidth=3)
    return alt.Legend(orient="bottom", title=None, columns=2, labelLimit=260)


def _marker_layers(numbered: bool = True) -> list:
    bands = alt.Chart(alt.NamedData("bands")).mark_rect(color=RED, opacity=0.12).encode(
        x="time:T", x2="end:T", tooltip=["label:N", alt.Tooltip("time:T", format="%H:%M:%S")])
    rules = alt.Chart(alt.NamedData("markers")).mark_rule(color=RED, strokeDash=[4, 3]).encode(
        x="time:T", tooltip=["n:N", "label:N", alt.Tooltip("time:T", format="%H:%M:%S")])
    if not numbered:  # an audience: the change is said in words above the chart, not as a number to look up
        return [bands, rules]
    # pinned to the plot's top edge in pixels: an offset (dy) pushed them outside and autosize squashed the plot
    labels = alt.Chart(alt.NamedData("markers")).mark_text(
        align="left", baseline="top", dx=3, dy=2, color=RED, fontSize=10).encode(
        x="time:T", y=alt.value(0), text="n:N", tooltip=["label:N"])
    return [bands, rules, labels]


def _idle_layer() -> alt.Chart:
    """The words an empty chart shows in its middle (dataset 'idle' holds them only while there is no data)."""
    return alt.Chart(alt.NamedData("idle")).mark_text(
        fontSize=16, color="#666", align="center", baseline="middle",
        x={"expr": "width / 2"}, y={"expr": "height / 2"}).encode(text="text:N")


def _lines(title, unit: str, dashed: tuple[str, ...] = (), data: str = "main", audience: bool = False,
           height: int = HEIGHT) -> alt.Chart:
    axis = alt.Axis(format=AXIS_FORMAT, tickCount=5, labelFontSize=13 if audience else 10)
    return alt.Chart(alt.NamedData(data), title=title, height=height).mark_line(
        interpolate="monotone", strokeWidth=3 if audience else 2).encode(
        x=_x(),
        y=alt.Y("value:Q", title=unit, axis=axis),
        color=alt.Color("series:N", legend=_legend(audience)),
        strokeDash=alt.condition(alt.FieldOneOfPredicate("series", list(dashed)), alt.value([4, 2]), alt.value([1, 0])),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("n:Q", title="samples"),
                 alt.Tooltip("time:T", format="%H:%M:%S")],
    )


def _sla_layers() -> list:
    """The SLA as a dashed green line, labelled at its right end ('SLA 50 ms')."""
    rule = alt.Chart(alt.NamedData("sla")).mark_rule(color=GREEN, strokeDash=[6, 3], strokeWidth=2).encode(
        y="sla:Q", tooltip=["label:N"])
    text = alt.Chart(alt.NamedData("sla")).mark_text(
        align="right", baseline="bottom", dx=-4, dy=-3, color=GREEN, fontSize=12, fontWeight="bold").encode(
        y="sla:Q", x=alt.value("width"), text="label:N")
    return [rule, text]


def _breakdown_area(audience: bool = False) -> alt.Chart:
    order = [name(k, audience) for k in BREAKDOWN]
    title = "Where a request's time in the server goes (ms)" if audience else \
        "Where a request's server time goes (per request, per second)"
    return alt.Chart(alt.NamedData("main"), title=title, height=HEIGHT).mark_area(opacity=0.85).encode(
        x=_x(), y=alt.Y("value:Q", stack="zero", title="ms", axis=alt.Axis(format=AXIS_FORMAT)),
        color=alt.Color("series:N", sort=order, legend=_legend(audience)),
        order=alt.Order("series_order:Q"),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.2f"), alt.Tooltip("time:T", format="%H:%M:%S")],
    ).transform_calculate(series_order=f"indexof({order!r}, datum.series)")


def _per_class(audience: bool = False) -> alt.LayerChart:
    lines = _lines("Per class: p99 (lines), rejected + timeouts/s (bars)", "ms")
    bars = alt.Chart(alt.NamedData("bars")).mark_bar(opacity=0.4).encode(
        x="time:T", y=alt.Y("value:Q", title="rejected/s", axis=alt.Axis(format=AXIS_FORMAT),
                            scale=alt.Scale(domain={"unionWith": [0, 1]})),  # all zero: 0..1, not NaN
        color=alt.Color("series:N"))
    return alt.layer(lines, bars).resolve_scale(y="independent")


SERVER_QUANTILES = ("p50_us", "p99_us")
# where the server reports no quantile: Triton's latency summaries are off (its default, and the lab's: they cost the
# server CPU on every request, app.server.embedded.SUMMARIES_VARIABLE), or no request came in the last minute
# Two short lines: a subtitle wider than the chart makes Vega's autosize squash the plot to a sliver (the Latency
# chart in a page's half-width column, 2026-12-07, where one line of 150 characters left it 30 px wide)
SUBTITLE_CHARS = 64  # the longest subtitle line a half-width column holds beside its plot
SUBTITLE_LINE_PX = 13  # each subtitle line makes its chart this much taller, so its plot is as tall as its neighbours'
SUMMARIES_OFF = ("server p50/p99: none (Triton's latency summaries are off;",
                 "TBL_SERVER_SUMMARIES=1 turns them on, at a CPU cost per request)")
CLIENT_QUANTILES = ("p50_ms", "p99_ms")


def _latency(audience: bool = False) -> alt.LayerChart:
    dashed = tuple(name(k, audience) for k in SERVER_QUANTILES)
    return alt.layer(_lines(alt.Title("Latency", subtitle=[""]), "ms", dashed, audience=audience), *_sla_layers())


def _demo_latency(audience: bool = True) -> alt.LayerChart:
    title = alt.Title("How long answers take (ms, each second)", fontSize=16, anchor="start")
    return alt.layer(_lines(title, "ms", audience=True, height=DEMO_HEIGHT), *_sla_layers())


def _throughput(audience: bool = False) -> alt.LayerChart:
    """The answers per second, over the step line of a rate trace's played rate (dataset 'trace', empty without)."""
    lines = _lines("Answers per second" if audience else "Throughput and goodput (per second)",
                   "per second", (name("infer_rps", audience),), audience=audience)
    trace = alt.Chart(alt.NamedData("trace")).mark_line(
        interpolate="step-after", strokeWidth=2, opacity=0.6, strokeDash=[1, 2]).encode(
        x="time:T", y="value:Q", color=alt.Color("series:N"),
        tooltip=["series:N", alt.Tooltip("value:Q", format=",.1f", title="asked req/s"),
                 alt.Tooltip("time:T", format="%H:%M:%S")])
    return alt.layer(lines, trace)


_BUILDERS = {
    "throughput": _throughput,
    "latency": _latency,
    "demo_latency": _demo_latency,
    "breakdown": _breakdown_area,
    "pending": lambda audience: _lines("Requests waiting, and batch size" if audience else
                                       "Queue depth and batch size", "count", audience=audience),
    "per_class": _per_class,
}


@lru_cache(maxsize=None)
def template(kind: str, zoom: bool = False, audience: bool = False) -> dict:
    """Return the Vega-Lite spec of a chart kind with named, empty datasets (built once per process)."""
    if kind == "batch_histogram":
        bars = alt.Chart(alt.NamedData("main"), height=HEIGHT).mark_bar().encode(
            x=alt.X("batch size:O", title="requests per batch" if audience else "batch size"),
            y=alt.Y("executions:Q", title="batches" if audience else "executions", axis=alt.Axis(format=AXIS_FORMAT)),
            tooltip=["batch size:O", "executions:Q", alt.Tooltip("share:Q", format=".0%")])
        chart = alt.layer(bars, _idle_layer(), title="Batch sizes Triton formed")
    else:
        chart = alt.layer(_BUILDERS[kind](audience), *_marker_layers(numbered=not audience), _idle_layer())
        if zoom:
            chart = chart.interactive(bind_y=False)
    return chart.to_dict(validate=False)  # tests validate each template once against the schema


def _spec(kind: str, zoom: bool, markers, audience: bool = False, idle_text: str = IDLE, **datasets) -> dict:
    spec = copy.deepcopy(template(kind, zoom, audience))
    if markers is not None:
        datasets.update(markers=marker_records(markers), bands=band_records(markers))
    main = datasets.get("main") or []
    idle = not any(r.get("value", r.get("executions")) is not None for r in main)
    datasets["idle"] = [{"text": idle_text}] if idle else []
    spec["datasets"] = datasets
    if idle:
        _no_value_axes(spec)
    return spec


def _no_value_axes(spec: dict) -> None:
    """Drop the value axes of a chart with nothing to draw: an empty domain reads '0' alone, or NaN."""
    for layer in spec.get("layer", ()):
        _no_value_axes(layer)
    y = (spec.get("encoding") or {}).get("y")
    if isinstance(y, dict) and "field" in y:
        y["axis"] = None


def _words(records: list[dict], keys: tuple[str, ...], audience: bool) -> list[dict]:
    """Return records with each series named in the presenter's words (audience), else as they are."""
    if not audience:
        return records
    names = {label(k, False): presenter_label(k) for k in keys}
    return [{**r, "series": names.get(r["series"], r["series"])} for r in records]


def throughput(metrics_rows, load_rows, markers, zoom: bool = False, audience: bool = False,
               trace: list[tuple[float, float]] = ()) -> dict:
    """Server inferences/s against client throughput and goodput; under them, a rate trace's played rate as a step
    line (trace: (epoch s, req/s) points, loadgen.rate_trace.wall_clock.played_points)."""
    keys = ("infer_rps", "throughput_rps", "goodput_rps")
    main = series(metrics_rows, keys[:1]) + series(client_totals(load_rows), keys[1:])
    return _spec("throughput", zoom, markers, audience, main=_words(main, keys, audience), trace=trace_records(trace))


def trace_records(points: list[tuple[float, float]]) -> list[dict]:
    """Return a played trace's step points as the throughput chart's 'trace' dataset."""
    return [{"time": t * 1000.0, "series": TRACE_SERIES, "value": r} for t, r in points]


def latency(metrics_rows, load_rows, markers, sla_ms: float | None = None, zoom: bool = False,
            audience: bool = False, idle_text: str = IDLE) -> dict:
    """Client p50/p99 per second (the authority) against the server's 60 s summary quantiles, with the SLA."""
    server = series(metrics_rows, SERVER_QUANTILES)
    main = _words(series(client_totals(load_rows), CLIENT_QUANTILES) + server, CLIENT_QUANTILES + SERVER_QUANTILES,
                  audience)
    values = [r["value"] for r in main if r["value"] is not None]
    cap = spike_cap(values, sla_ms)
    reported = any(r["value"] is not None for r in server)
    subtitle = ["client: each second's requests (the authority)",
                *(("server: 60 s sliding summary",) if reported else SUMMARIES_OFF)]
    spec = _spec("latency", zoom, markers, audience, idle_text, main=main, sla=_sla(sla_ms))
    lines = spec["layer"][0]["layer"][0]
    if cap is not None:
        subtitle.append(f"axis capped at {cap:,.0f} ms (a spike reached {max(values):,.0f} ms)")
        lines["encoding"]["y"]["scale"] = {"domain": [0, cap], "clamp": True}
    lines["title"] = {"text": "Latency", "subtitle": subtitle}
    spec["height"] = HEIGHT + SUBTITLE_LINE_PX * len(subtitle)  # Vega fits the title's lines inside the height
    return spec


def demo_latency(load_rows, markers, sla_ms: float | None = None, idle_text: str = IDLE) -> dict:
    """The audience's one latency chart: the clients' p50 and p99 of each second, the SLA labelled, tall."""
    main = _words(series(client_totals(load_rows), CLIENT_QUANTILES), CLIENT_QUANTILES, True)
    values = [r["value"] for r in main if r["value"] is not None]
    spec = _spec("demo_latency", False, markers, True, idle_text, main=main, sla=_sla(sla_ms))
    cap = spike_cap(values, sla_ms)
    if cap is not None:  # one spike must not flatten the lines the audience is shown
        lines = spec["layer"][0]["layer"][0]
        lines["encoding"]["y"]["scale"] = {"domain": [0, cap], "clamp": True}
        lines["title"] = {**lines["title"], "subtitle": f"axis capped at {cap:,.0f} ms (a spike reached "
                                                        f"{max(values):,.0f} ms)"}
    return spec


def _sla(sla_ms: float | None) -> list[dict]:
    return [{"sla": sla_ms, "label": f"SLA {sla_ms:g} ms"}] if sla_ms else []


def spike_cap(values: list[float], sla_ms: float | None = None) -> float | None:
    """Return a y-axis cap when a few spikes would flatten everything else (None when the values are even)."""
    ordered = sorted(v for v in values if v is not None and v == v)  # NaN marks a gap
    if len(ordered) < 10:
        return None
    typical = ordered[int(0.9 * (len(ordered) - 1))]
    cap = max(2.0 * typical, 1.5 * (sla_ms or 0.0))
    return cap if ordered[-1] > 2.0 * cap and cap > 0 else None


def breakdown(metrics_rows, markers, zoom: bool = False, audience: bool = False) -> dict:
    """Stacked per-request queue / compute input / infer / output, in ms."""
    return _spec("breakdown", zoom, markers, audience, main=_words(series(metrics_rows, BREAKDOWN), BREAKDOWN, audience))


def pending(metrics_rows, markers, zoom: bool = False, audience: bool = False) -> dict:
    """The pending-request gauge (queue depth) and the average batch size."""
    keys = ("pending", "avg_batch")
    return _spec("pending", zoom, markers, audience, main=_words(series(metrics_rows, keys), keys, audience))


def batch_histogram(hist: dict[int, int], window: str, audience: bool = False) -> dict:
    """Executions per batch size formed by the scheduler in the window."""
    spec = _spec("batch_histogram", False, None, audience, main=batch_records(hist))
    spec["title"] = f"Batches formed, by size ({window})" if audience else f"Batch sizes Triton formed ({window})"
    return spec


def per_class(load_rows, markers, zoom: bool = False) -> dict:
    """p99 of each traffic class per second, with rejections and timeouts as bars."""
    rows = [r for r in load_rows if r.get("cls") != ALL]
    p99 = label("p99_ms", False)
    main = [{"time": r["t"] * 1000.0, "series": f"{r['cls']}: {p99}", "value": r["p99_ms"], "n": r.get("latency_n")}
            for r in rows if r.get("p99_ms") is not None]
    bars = [{"time": r["t"] * 1000.0, "series": f"{r['cls']}: rejected + timeouts/s",
             "value": (r.get("rejected") or 0) + (r.get("timeouts") or 0)} for r in rows]
    return _spec("per_class", zoom, markers, main=main, bars=bars)
