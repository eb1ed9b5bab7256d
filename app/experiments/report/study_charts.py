"""Altair charts of sweeps and A/B comparisons, shared by the Experiments page and the HTML report.

Every chart draws only finite figures (a point or window without one is left out, never drawn as NaN)
and takes its labels from the metric catalog; with nothing to draw it says so in its title. Charts are laid
out to be read at any page width from 1280 px: single views fit the width they get and grow downwards (legends
below them, one entry a line, never truncated), compound charts keep a natural size narrower than the page's
main column, long titles wrap, a label beside a mark turns inwards near the right edge, and every row of a
difference chart has its own band. A/B arms are named as the report names them: letter and what they change.
"""
from __future__ import annotations

import math
import textwrap

import altair as alt

from app.experiments.ab.comparison import HEADLINE, ABResult
from app.timeline.meter import MeasuredWindow
from app.experiments.sweep.space import CONCURRENCY, SearchSpace
from app.store.database import DONE
from app.experiments.sweep.sweeper import Point, operating_point, pareto
from app.metrics.catalog import label, shown
from loadgen.stats import ALL

WIDTH, HEIGHT = 560, 320
PANEL = 270  # one panel of a side-by-side pair: the pair and its axes fit a 700 px column (the page's: 820 at 1280 px)
RED, GREEN, BLUE, GREY = "#d62728", "#2ca02c", "#1f77b4", "#7f7f7f"
HOLLOW = "hollow: never settled (the window limit came first)"
TRIAL_KEYS = (*HEADLINE, "p50_ms", "queue_us", "avg_batch")  # the per-trial panels of an A/B comparison
VERDICT_COLOURS = {"better": GREEN, "worse": RED, "higher": BLUE, "lower": BLUE, "no clear difference": GREY}
TITLE_CHARS, SUBTITLE_CHARS = 64, 88  # a title line and a subtitle line that fit WIDTH (13 px bold, 11 px)
ROW_STEP = 30  # px per row of the difference chart: one metric per row, whatever the chart's height
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")  # fill the width given; grow down, never squash
NATURAL = alt.AutoSizeParams(type="pad", contains="padding")  # compound charts: their own size
PADDING = {side: 8 for side in ("left", "top", "right", "bottom")}  # a title's box reaches past its glyphs


def lines(text: str, width: int) -> list[str]:
    """Return text broken at spaces into lines of at most width characters (one line when it fits)."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [text]


def title(text: str, subtitle: list[str] | tuple[str, ...] = ()) -> alt.Title:
    """Return a chart title wrapped to the chart's width, its subtitle lines wrapped too, anchored left."""
    sub = [line for s in subtitle for line in lines(s, SUBTITLE_CHARS)]
    head = lines(text, TITLE_CHARS)
    return alt.Title(head if len(head) > 1 else text, subtitle=sub or alt.Undefined, anchor="start", subtitlePadding=6,
                     offset=8)


def legend(name: str) -> alt.Legend:
    """Return a legend below the chart: one entry a line, labels never truncated."""
    return alt.Legend(title=name, orient="bottom", direction="vertical", columns=1, labelLimit=0, titleLimit=0)


def empty(text: str) -> alt.Chart:
    """Return a chart that only says, in its title, that there is nothing to draw."""
    return alt.Chart(alt.Data(values=[{"text": "nothing measured to draw"}]), title=title(text), width=WIDTH,
                     height=40, padding=PADDING).mark_text(color=GREY, fontSize=12).encode(
        text="text:N", x=alt.value(WIDTH / 2), y=alt.value(20))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def load_text(space: SearchSpace, load: float) -> str:
    """Return a load in words: 'concurrency 8' or '200 req/s'."""
    return f"concurrency {load:g}" if space.load_kind == CONCURRENCY else f"{load:g} req/s"


def load_title(space: SearchSpace) -> str:
    """Return the load axis' title."""
    return "concurrency (requests in flight)" if space.load_kind == CONCURRENCY else "offered rate (req/s)"


def point_rows(points: list[Point], space: SearchSpace) -> list[dict]:
    """Return one row per measured point with finite throughput and p99; flags the operating and Pareto points, and
    which points lie in the right half of the throughput range (their labels turn left, inside the chart)."""
    best = operating_point(space, points)
    front = {p.key for p in pareto(points)}
    order = {c.key: i for i, c in enumerate(space.choices())}
    done = [p for p in points if p.status == DONE and _finite(p.throughput) and _finite(p.p99)]
    low, high = min((p.throughput for p in done), default=0.0), max((p.throughput for p in done), default=0.0)
    rows = [{"config": p.choice.label, "order": order.get(p.choice.key, len(order)), "load": p.load,
             "load_text": load_text(space, p.load), "load_label": f"{p.load:g}", "throughput": p.throughput,
             "p99": p.p99, "goodput": p.goodput if _finite(p.goodput) else 0.0, "stable": p.stable,
             "settled": "yes" if p.stable else "no", "operating": best is not None and p.key == best.key,
             "pareto": p.key in front, "right": p.throughput > (low + high) / 2,
             "measured": len(p.repeats) + 1}
            for p in done]
    return sorted(rows, key=lambda r: (r["order"], r["load"]))


def _configs(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["config"] for r in rows))


def _colour(rows: list[dict]) -> alt.Color:
    return alt.Color("config:N", sort=_configs(rows), legend=legend("configuration"))


def _size(space: SearchSpace) -> alt.Size:
    """Return the dots' size by load (a label per dot would collide where the low loads bunch up)."""
    return alt.Size("load:Q", title=f"dot size: {load_title(space)}", scale=alt.Scale(type="sqrt", range=[18, 150]),
                    legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=0))


def _tooltip() -> list:
    return [alt.Tooltip("config:N", title="configuration"), alt.Tooltip("load_text:N", title="load"),
            alt.Tooltip("throughput:Q", title=label("throughput_rps"), format=",.0f"),
            alt.Tooltip("goodput:Q", title=label("goodput_rps"), format=",.0f"),
            alt.Tooltip("p99:Q", title=label("p99_ms"), format=",.2f"), "settled:N",
            alt.Tooltip("measured:Q", title="times measured")]


def _marks(base: alt.Chart, colour: alt.Color, size: alt.Size | None = None) -> list[alt.Chart]:
    """Return a series' line (by load) and its points: filled when settled, hollow when not."""
    sized = {"size": size} if size is not None else {}
    line = base.mark_line(strokeWidth=1.5).encode(color=colour, order=alt.Order("load:Q"))
    settled = base.mark_point(filled=True, size=55).encode(color=colour, tooltip=_tooltip(), **sized).transform_filter(
        "datum.stable")
    unsettled = base.mark_point(filled=False, size=55, strokeWidth=1.8).encode(
        color=colour, tooltip=_tooltip(), **sized).transform_filter("!datum.stable")
    return [line, settled, unsettled]


def _budget(space: SearchSpace) -> list[alt.Chart]:
    """Return the p99 budget as a dashed horizontal rule with its label."""
    data = alt.Data(values=[{"budget": space.p99_budget_ms, "text": f"p99 budget {space.p99_budget_ms:g} ms"}])
    rule = alt.Chart(data).mark_rule(color=RED, strokeDash=[6, 3]).encode(y="budget:Q")
    text = alt.Chart(data).mark_text(color=RED, align="left", dx=4, dy=-7, fontSize=10).encode(
        y="budget:Q", x=alt.value(0), text="text:N")
    return [rule, text]


def _operating(base: alt.Chart) -> list[alt.Chart]:
    """Return a ring and a label around the operating point; the label on the side that stays inside the chart."""
    best = base.transform_filter("datum.operating")
    label_ = {"color": GREEN, "dy": 16, "fontWeight": "bold"}
    return [best.mark_point(size=420, filled=False, strokeWidth=2.5, color=GREEN),
            best.transform_filter("!datum.right").mark_text(align="left", dx=8, **label_).encode(
                text=alt.value("operating point")),
            best.transform_filter("datum.right").mark_text(align="right", dx=-8, **label_).encode(
                text=alt.value("operating point"))]


def _xy() -> alt.Chart:
    return alt.Chart().encode(x=alt.X("throughput:Q", title=label("throughput_rps")),
                              y=alt.Y("p99:Q", title=label("p99_ms")))


def sweep_curves(points: list[Point], space: SearchSpace) -> alt.Chart:
    """Return p99 against throughput per configuration, along its loads, with the budget and operating point."""
    rows = point_rows(points, space)
    head = f"Latency against throughput — {space.model}"
    if not rows:
        return empty(f"{head}: no measured points")
    base = _xy()
    return alt.layer(*_marks(base, _colour(rows), _size(space)), *_budget(space), *_operating(base),
                     data=alt.Data(values=rows)).properties(
        title=title(head, [f"one line per configuration through its loads (dot size: {load_title(space)}); "
                           f"{HOLLOW}"]), width=WIDTH, height=HEIGHT, autosize=FIT_WIDTH, padding=PADDING)


def sweep_by_load(points: list[Point], space: SearchSpace) -> alt.Chart:
    """Return throughput and p99 against load, one line per configuration (two panels side by side)."""
    rows = point_rows(points, space)
    head = f"Throughput and p99 by load — {space.model}"
    if not rows:
        return empty(f"{head}: no measured points")
    loads = sorted({r["load"] for r in rows})
    doubling = len(loads) > 2 and loads[-1] / loads[0] >= 4
    # "~g": one load measured made a domain of one value, and the axis read 16.000000
    x = alt.X("load:Q", title=load_title(space), axis=alt.Axis(format="~g"),
              scale=alt.Scale(type="log", base=2) if doubling else alt.Undefined)
    colour = _colour(rows)

    def panel(field: str, key: str, extra: list) -> alt.LayerChart:
        base = alt.Chart().encode(x=x, y=alt.Y(f"{field}:Q", title=label(key)))
        return alt.layer(*_marks(base, colour), *extra).properties(width=PANEL, height=HEIGHT - 80)

    return alt.hconcat(panel("throughput", "throughput_rps", []), panel("p99", "p99_ms", _budget(space)),
                       data=alt.Data(values=rows), spacing=24).properties(
        title=title(head, [HOLLOW]), autosize=NATURAL, padding=PADDING)


def pareto_chart(points: list[Point], space: SearchSpace) -> alt.Chart:
    """Return every point, the Pareto front (no point beats it on both throughput and p99) and the budget."""
    rows = point_rows(points, space)
    head = f"Pareto front — {space.model}"
    if not rows:
        return empty(f"{head}: no measured points")
    base = _xy()
    every = base.mark_point(filled=True, size=45, opacity=0.55).encode(color=_colour(rows), tooltip=_tooltip())
    front = base.transform_filter("datum.pareto").mark_line(color="black", strokeWidth=1.5, point=alt.OverlayMarkDef(
        color="black", size=30)).encode(order=alt.Order("throughput:Q"), tooltip=_tooltip())
    return alt.layer(every, front, *_budget(space), *_operating(base), data=alt.Data(values=rows)).properties(
        title=title(head, ["black: points no other point beats on both throughput and p99"]),
        width=WIDTH, height=HEIGHT, autosize=FIT_WIDTH, padding=PADDING)


# --- A/B comparisons ------------------------------------------------------------------------------------
def _arms(result: ABResult) -> list[str]:
    return [a.name for a in result.plan.arms]


def _titles(result: ABResult) -> list[str]:
    """Return the arms as the report names them ('A (1 instance, …)', 'B (delay 500 → 5000 µs)'), in plan order."""
    return [result.title(a) for a in _arms(result)]


def _arm_colour(result: ABResult) -> alt.Color:
    return alt.Color("arm:N", sort=_titles(result), legend=legend("configuration"))


def trial_rows(result: ABResult) -> list[dict]:
    """Return one row per (metric, arm, trial) with a finite value, in the metric's display unit; arm: its title."""
    return [{"metric": label(key), "arm": result.title(arm), "letter": result.letter(arm), "trial": t + 1,
             "value": shown(key, v)}
            for key in TRIAL_KEYS for arm in _arms(result)
            for t, v in enumerate(result.values(arm, key)) if _finite(v)]


def ab_trials(result: ABResult) -> alt.Chart:
    """Return each metric's per-trial values per arm (dots) and their mean (bar), so the spread shows: arms by letter
    on the axis, by letter and change in the legend below."""
    rows = trial_rows(result)
    head = "Every trial, per configuration"
    if not rows:
        return empty(f"{head}: no finished trials")
    letters = [result.letter(a) for a in _arms(result)]
    x = alt.X("letter:N", sort=letters, title=None, axis=alt.Axis(labelAngle=0))
    dots = alt.Chart().mark_point(filled=True, size=45, opacity=0.8).encode(
        x=x, xOffset=alt.XOffset("trial:N"),
        y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False), axis=alt.Axis(format=",.4~g")),
        color=_arm_colour(result), tooltip=["arm:N", "trial:N", alt.Tooltip("value:Q", format=",.2f")])
    mean = alt.Chart().mark_tick(color="black", thickness=2, size=36).encode(
        x=x, y=alt.Y("mean(value):Q"), tooltip=["arm:N", alt.Tooltip("mean(value):Q", title="mean", format=",.2f")])
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    return alt.layer(dots, mean).properties(width=max(170, 56 * len(letters)), height=150).facet(
        facet=alt.Facet("metric:N", sort=metrics, title=None, header=alt.Header(labelLimit=0, labelFontSize=12)),
        columns=3, spacing={"row": 24, "column": 28}, data=alt.Data(values=rows)).resolve_scale(
        y="independent").properties(title=title(head, ["dots: trials; black bar: mean"]), autosize=NATURAL,
                                    padding=PADDING)


def difference_rows(result: ABResult, arm: str) -> list[dict]:
    """Return one row per compared metric of arm: relative difference to the baseline and its interval."""
    rows = []
    for cls, d in result.differences(arm):
        if d.relative is None or not all(map(_finite, (d.relative, *d.relative_interval))):
            continue
        low, high = d.relative_interval
        name = label(d.key) + ("" if cls == ALL else f" [{cls}]")
        rows.append({"metric": name, "relative": d.relative, "low": low, "high": high, "verdict": d.verdict,
                     "text": f"{d.relative:+.1%} ({d.level_text} CI {low:+.1%} to {high:+.1%})"})
    return rows


def ab_differences(result: ABResult, arm: str) -> alt.Chart:
    """Return each metric's relative difference of arm to the baseline, its interval around 0, by verdict: one
    metric per row."""
    base = result.plan.arms[0].name
    rows = difference_rows(result, arm)
    head = f"{result.title(arm)} against {result.title(base)}: difference and interval"
    if not rows:
        return empty(f"{head}: fewer than two complete trials")
    colour = alt.Color("verdict:N", scale=alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values())),
                       legend=alt.Legend(title="verdict", orient="bottom", direction="horizontal", labelLimit=0))
    y = alt.Y("metric:N", sort=None, title=None, axis=alt.Axis(labelLimit=0, labelPadding=6))
    x = alt.X("relative:Q", title=f"relative to {result.letter(base)}", axis=alt.Axis(format="+.0%"))
    bars = alt.Chart().mark_rule(strokeWidth=2.5).encode(y=y, x=alt.X("low:Q"), x2="high:Q", color=colour)
    dots = alt.Chart().mark_point(filled=True, size=70).encode(y=y, x=x, color=colour,
                                                               tooltip=["metric:N", "text:N", "verdict:N"])
    zero = alt.Chart(alt.Data(values=[{"zero": 0}])).mark_rule(color="black").encode(x="zero:Q")
    return alt.layer(zero, bars, dots, data=alt.Data(values=rows)).properties(
        title=title(head, ["B − A as a share of A's mean; an interval across 0: no clear difference",
                           (f"goodput, p99, throughput: {result.family} intervals together at 95 %; "
                            "the rest 95 % each")]),
        width=WIDTH, height=alt.Step(ROW_STEP), autosize=FIT_WIDTH, padding=PADDING)


def timeline_rows(result: ABResult) -> list[dict]:
    """Return per-window client p99 and throughput of every trial, timed from the trial's first window."""
    rows = []
    for arm in _arms(result):
        name, letter = result.title(arm), result.letter(arm)
        for number, trial in sorted(result.trials.get(arm, {}).items()):
            windows = trial.windows or []
            for w in windows:
                figures = MeasuredWindow.from_dict(w).figures()
                for key in ("p99_ms", "throughput_rps"):
                    if _finite(value := figures.get(key)):
                        rows.append({"arm": name, "series": f"{letter}, trial {number + 1}", "key": key,
                                     "t": w["t1"] - windows[0]["t0"], "value": value})
    return rows


def ab_timeline(result: ABResult) -> alt.Chart:
    """Return p99 and throughput per measurement window over trial time: one line per arm × trial."""
    rows = timeline_rows(result)
    head = "Per-window p99 and throughput through each trial"
    if not rows:
        return empty(f"{head}: no stored windows")

    def panel(key: str) -> alt.Chart:
        return alt.Chart().transform_filter(alt.FieldEqualPredicate(field="key", equal=key)).mark_line(
            point=True, strokeWidth=1.2, opacity=0.8).encode(
            x=alt.X("t:Q", title="seconds into the trial's measurement"), y=alt.Y("value:Q", title=label(key)),
            color=_arm_colour(result), detail="series:N",
            tooltip=["series:N", alt.Tooltip("t:Q", format=".1f"), alt.Tooltip("value:Q", format=",.2f")]).properties(
            width=WIDTH, height=HEIGHT // 2)

    return alt.vconcat(panel("p99_ms"), panel("throughput_rps"), data=alt.Data(values=rows)).properties(
        title=title(head, ["one line per configuration and trial"]), padding=PADDING)
