"""Sweep and A/B charts, rendered to SVG by vl-convert, on made-up studies (tests/unit/experiments/samples.py)."""
from __future__ import annotations

import html
import re

import pytest
import vl_convert

from app.experiments.report import study_charts as charts
from app.experiments.ab.comparison import ABResult
from app.experiments.sweep.space import RATE, Choice
from app.store.database import DONE
from app.experiments.sweep.sweeper import Point
from app.timeline.figures import Figures
from loadgen.stats import ALL
from tests.unit.experiments import samples

MARK = re.compile(r'<path aria-label="([^"]*)" role="graphics-symbol" aria-roledescription="([^"]+)"([^>]*)>')


def marks(svg: str, role: str) -> list[tuple[dict, str]]:
    """Return (aria fields, other attributes) of every drawn mark of a role ('point', 'tick', 'line mark')."""
    return [(dict(f.split(": ", 1) for f in label.split("; ")), attrs)
            for label, kind, attrs in MARK.findall(svg) if kind == role]


DRAWN: dict[str, str] = {}  # a chart's Vega-Lite text -> its SVG: a chart several tests read is drawn once


def render(chart) -> str:
    """Return the chart drawn by vl-convert (validated against the schema: test_every_study_chart_is_valid_vega_lite)."""
    spec = chart.to_json(validate=False)
    if spec not in DRAWN:
        DRAWN[spec] = vl_convert.vegalite_to_svg(spec)
    svg = DRAWN[spec]
    assert "NaN" not in svg and "Infinity" not in svg
    return svg


@pytest.fixture(scope="module")
def sweep():
    space = samples.sweep_space()
    return space, samples.sweep_points(space)


@pytest.fixture(scope="module")
def ab() -> ABResult:
    return samples.ab_result()


def test_curves_draw_every_measured_point_hollow_when_unsettled_with_budget_and_operating_point(sweep):
    space, points = sweep
    svg = render(charts.sweep_curves(points, space))
    drawn = marks(svg, "point")
    ring = [attrs for fields, attrs in drawn if "configuration" not in fields]  # the ring has no tooltip
    dots = [(fields, attrs) for fields, attrs in drawn if "configuration" in fields]
    assert len(dots) == 5 * 5 and len(ring) == 1  # 1 or 2 instances × 2 delays and the default; 4 instances failed
    assert {f["configuration"] for f, _ in dots} == {c.label for c in space.choices() if c.instances != 4}
    hollow = [f for f, attrs in dots if " fill=" not in attrs]
    assert [(f["configuration"], f["load"]) for f in hollow] == [("2 instances, delay 0 µs", "concurrency 8")]
    assert all(f["settled"] == "no" for f in hollow) and " stroke=" in ring[0]
    assert "p99 budget 50 ms" in svg and svg.count(">operating point</text>") == 1
    # the made-up capacities make 2 instances with delay 2000 µs the largest inside the budget, at the top load
    best = [r for r in charts.point_rows(points, space) if r["operating"]]
    assert [(r["config"], r["load"]) for r in best] == [("2 instances, delay 2000 µs", 16)]


def test_points_without_figures_are_left_out_and_no_axis_gets_nan():
    space = samples.sweep_space(instances=(1,), delays_us=(0,), include_default=False, loads=(1, 2))
    good = samples.sweep_points(space)
    silent = Point(Choice(instances=1, delay_us=0), 4, DONE, False, figures=Figures.from_dict({"client": {ALL: {
        "throughput_rps": 0.0, "p99_ms": None}}, "server": {}}))
    # each point once per panel; the Pareto chart draws its front's points (here both) a second time
    for chart, times in ((charts.sweep_curves, 1), (charts.sweep_by_load, 2), (charts.pareto_chart, 2)):
        svg = render(chart([*good, silent], space))
        assert len([f for f, _ in marks(svg, "point") if "configuration" in f]) == 2 * times


@pytest.mark.parametrize("chart", [charts.sweep_curves, charts.sweep_by_load, charts.pareto_chart])
def test_a_sweep_with_nothing_measured_is_an_empty_chart_saying_so(chart):
    svg = render(chart([], samples.sweep_space()))
    assert "no measured points" in svg and not marks(svg, "point")


def test_by_load_has_a_throughput_and_a_p99_panel_on_a_doubling_axis(sweep):
    space, points = sweep
    spec = charts.sweep_by_load(points, space).to_dict()
    titles = [layer["encoding"]["y"]["title"] for panel in spec["hconcat"] for layer in panel["layer"][:1]]
    assert titles == ["client ok throughput (req/s)", "client p99 (ms)"]
    assert spec["hconcat"][0]["layer"][0]["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    rates = samples.sweep_space(load_kind=RATE, loads=(100, 150), instances=(1,), delays_us=(0,))
    spec = charts.sweep_by_load(samples.sweep_points(rates), rates).to_dict()
    assert "scale" not in spec["hconcat"][0]["layer"][0]["encoding"]["x"]  # two close rates: a linear axis
    # one load measured: the browser's Vega labelled its tick 16.000000 without a format (vl-convert's does not)
    one = samples.sweep_space(loads=(16,), instances=(1,), delays_us=(0,))
    spec = charts.sweep_by_load(samples.sweep_points(one), one).to_dict()
    assert all(panel["layer"][0]["encoding"]["x"]["axis"]["format"] == "~g" for panel in spec["hconcat"]), spec


def _point(throughput: float, p99: float, name: int) -> Point:
    return Point(Choice(instances=name), 1, DONE, True, figures=Figures.from_dict({"client": {ALL: {
        "throughput_rps": throughput, "goodput_rps": throughput, "p99_ms": p99}}, "server": {}}))


def test_the_pareto_front_joins_only_points_nothing_beats_on_both_axes():
    space = samples.sweep_space(instances=(1, 2, 3), delays_us=(), include_default=False, loads=(1,), p99_budget_ms=30)
    points = [_point(100, 10, 1), _point(200, 20, 2), _point(150, 25, 3)]  # 3 is beaten by 2 on both
    rows = charts.point_rows(points, space)
    assert [r["config"] for r in rows if r["pareto"]] == ["1 instance", "2 instances"]
    assert [r["config"] for r in rows if r["operating"]] == ["2 instances"]
    render(charts.pareto_chart(points, space))


def test_trials_show_each_arms_values_per_trial_and_their_mean(ab):
    svg = render(charts.ab_trials(ab))
    dots = marks(svg, "point")
    assert len(dots) == len(charts.TRIAL_KEYS) * 2 * 4 and len(marks(svg, "tick")) == len(charts.TRIAL_KEYS) * 2
    baseline = "A (1 instance, max batch 32, delay 500 µs, preferred [4, 8])"  # as the report names it
    goodput = [r for r in charts.trial_rows(ab) if r["metric"] == "goodput within SLA (req/s)" and r["arm"] == baseline]
    assert [r["value"] for r in goodput] == ab.values("start", "goodput_rps")
    assert {r["letter"] for r in charts.trial_rows(ab)} == {"A", "B"}


def _texts(svg: str) -> list[str]:
    """Return every text the SVG draws (a multi-line text: each line)."""
    return [html.unescape(t) for t in re.findall(r"<(?:text|tspan)[^>]*>([^<]+)</(?:text|tspan)>", svg)]


def test_arms_are_named_by_letter_and_change_in_full_wherever_the_ab_charts_name_them(ab):
    """The lab's names ('start', 'sweep 2: …') never label a chart; the report's titles do, never cut short."""
    for svg in (render(charts.ab_trials(ab)), render(charts.ab_timeline(ab))):
        texts = _texts(svg)
        assert "B (instances 1 → 2, delay 500 → 2000 µs)" in texts, texts
        assert "A (1 instance, max batch 32, delay 500 µs, preferred [4, 8])" in texts
        assert not [t for t in texts if t.endswith("…")], texts  # a label truncated by the legend's limit
        assert "start" not in texts and "2 instances" not in texts
    axis = [t for t in _texts(render(charts.ab_trials(ab))) if t in ("A", "B")]
    assert axis.count("A") == axis.count("B") >= 2  # the panels' axes: letters, short enough for any panel


def test_the_difference_chart_gives_every_metric_a_row_of_its_own(ab):
    svg = render(charts.ab_differences(ab, "2 instances"))
    ys = sorted(float(re.search(r"translate\([^,]+,([^)]+)\)", attrs).group(1)) for _, attrs in marks(svg, "point"))
    assert len(ys) == len(charts.difference_rows(ab, "2 instances")) >= 6
    gaps = [b - a for a, b in zip(ys, ys[1:])]
    assert min(gaps) >= charts.ROW_STEP - 1, gaps  # a row per metric at any page width, never one on another


def test_a_long_title_wraps_and_a_label_beside_the_operating_point_stays_inside(sweep):
    long = samples.ab_result(names=("start", "B"))
    head = charts.ab_differences(long, "B").to_dict()["title"]["text"]
    assert isinstance(head, list) and len(head) >= 2 and max(map(len, head)) <= charts.TITLE_CHARS, head
    space, points = sweep
    ring = [t for t in re.findall(r'<text[^>]*>operating point</text>', render(charts.sweep_curves(points, space)))]
    assert len(ring) == 1 and 'text-anchor="end"' in ring[0], ring  # the best point is the rightmost: label left


def test_differences_are_coloured_by_verdict_around_a_zero_rule(ab):
    svg = render(charts.ab_differences(ab, "2 instances"))
    colour = {f["metric"]: re.search(r'fill="([^"]+)"', attrs).group(1) for f, attrs in marks(svg, "point")}
    assert colour["goodput within SLA (req/s)"] == charts.GREEN  # made up: 25 % more goodput, clearly better
    assert colour["client p99 (ms)"] == charts.GREEN
    assert colour["average batch size (inferences)"] == charts.GREY  # identical in both arms
    assert "relative to A" in svg and "goodput, p99, throughput: 3 intervals together at 95 %" in svg
    tips = {r["metric"]: r["text"] for r in charts.difference_rows(ab, "2 instances")}
    assert "98.3 % CI" in tips["client p99 (ms)"] and "(95 % CI" in tips["average batch size (inferences)"]
    zero = charts.ab_differences(ab, "2 instances").to_dict()["layer"][0]
    assert zero["mark"]["type"] == "rule" and zero["data"]["values"] == [{"zero": 0}]


def test_a_comparison_with_one_trial_per_arm_has_no_interval_and_says_so(ab):
    one = ABResult(ab.study_id, ab.plan, {arm: {0: per[0]} for arm, per in ab.trials.items()})
    assert "fewer than two complete trials" in render(charts.ab_differences(one, "2 instances"))
    nothing = ABResult(ab.study_id, ab.plan, {})
    for chart, why in ((charts.ab_trials(nothing), "no finished trials"), (charts.ab_timeline(nothing), "no stored "
                       "windows"), (charts.ab_differences(nothing, "2 instances"), "fewer than two complete trials")):
        head = chart.to_dict()["title"]["text"]
        assert " ".join(head if isinstance(head, list) else [head]).endswith(f": {why}") and why in render(chart)


def test_the_timeline_draws_one_line_per_arm_and_trial_in_each_panel(ab):
    svg = render(charts.ab_timeline(ab))
    lines = marks(svg, "line mark")
    assert len({f["series"] for f, _ in lines}) == 2 * 4 and len(lines) == 2 * 2 * 4  # p99 and throughput panels
    rows = charts.timeline_rows(ab)
    assert sorted({r["t"] for r in rows}) == [1.0, 2.0, 3.0]  # three 1 s windows from each trial's start


def test_every_study_chart_is_valid_vega_lite(sweep, ab):
    """The report renders its charts unvalidated (app.experiments.report.html_report.svg): each kind is validated here."""
    space, points = sweep
    made = {"sweep_curves": charts.sweep_curves(points, space), "sweep_by_load": charts.sweep_by_load(points, space),
            "pareto_chart": charts.pareto_chart(points, space), "ab_trials": charts.ab_trials(ab),
            "ab_differences": charts.ab_differences(ab, ab.plan.arms[1].name), "ab_timeline": charts.ab_timeline(ab),
            "empty": charts.empty("nothing measured")}
    public = {name for name, f in vars(charts).items()
              if callable(f) and getattr(f, "__module__", "") == charts.__name__ and not name.startswith("_")
              and getattr(f, "__annotations__", {}).get("return") in ("alt.Chart", "alt.LayerChart")}
    assert public <= set(made), f"a study chart not validated here: {sorted(public - set(made))}"
    for name, chart in made.items():
        try:
            chart.to_dict(validate=True)
        except Exception as exc:
            raise AssertionError(f"{name} is not valid Vega-Lite: {exc}") from exc
