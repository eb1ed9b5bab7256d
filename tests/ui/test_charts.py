"""Chart helpers: templates valid once, data filled per refresh, the latency axis readable around a spike."""
from __future__ import annotations

import altair as alt
import pytest

from app.ui.live import live_charts as charts
from app.ui.live.chart_rows import series
from app.ui.live.live_charts import latency, spike_cap

KINDS = ("throughput", "latency", "breakdown", "pending", "per_class", "batch_histogram")


@pytest.mark.parametrize(("kind", "zoom"), [(k, z) for k in KINDS for z in (False, True)
                                            if not (k == "batch_histogram" and z)])  # no time axis to zoom
def test_every_template_is_a_valid_vega_lite_spec(kind, zoom):
    spec = charts.template(kind, zoom)
    (alt.LayerChart if "layer" in spec else alt.Chart).from_dict(spec)  # validates against the schema


def test_a_refresh_fills_the_datasets_and_leaves_the_template_alone():
    rows = [{"t": 1000.0 + i, "infer_rps": 100.0 + i} for i in range(5)]
    before = str(charts.template("throughput"))
    spec = charts.throughput(rows, [], [])
    assert [r["value"] for r in spec["datasets"]["main"]] == [100.0, 101.0, 102.0, 103.0, 104.0]
    assert spec["datasets"]["markers"] == [] and str(charts.template("throughput")) == before


def test_a_lone_spike_caps_the_axis_and_even_values_do_not():
    flat = [10.0 + i % 3 for i in range(60)]
    assert spike_cap(flat) is None
    spiky = flat + [1900.0]
    assert spike_cap(spiky) == 24.0  # twice the 90th percentile
    assert spike_cap(spiky, sla_ms=50.0) == 75.0  # the SLA line stays in view
    assert spike_cap([5.0, 900.0]) is None  # too few points to call one a spike


def test_gaps_do_not_confuse_the_spike_cap():
    assert spike_cap([10.0] * 20 + [float("nan")] * 5 + [1900.0]) == 20.0


def test_the_latency_chart_names_the_cap_and_draws_the_sla():
    rows = [{"t": 1000.0 + i, "cls": "all", "p50_ms": 5.0, "p99_ms": 1900.0 if i == 30 else 9.0, "latency_n": 100}
            for i in range(60)]
    spec = latency([], rows, [], sla_ms=50.0)
    assert "axis capped at 75 ms (a spike reached 1,900 ms)" in str(spec) and spec["datasets"]["sla"][0]["sla"] == 50.0
    alt.LayerChart.from_dict(spec)  # still a valid spec with its data


def test_series_break_at_missing_readings_and_long_gaps():
    rows = [{"t": 100.0, "p99_ms": 5.0}, {"t": 101.0, "p99_ms": None}, {"t": 102.0, "p99_ms": 6.0},
            {"t": 110.0, "p99_ms": 7.0}]
    records = series(rows, ("p99_ms",))
    assert [r["value"] for r in records] == [5.0, None, 6.0, None, 7.0]  # the missing reading; a break 102 -> 110
    assert records[3]["time"] == 103_000.0
