"""The live charts (app/ui/live/live_charts.py): every template a valid Vega-Lite spec, data filled per refresh, the
latency axis readable around a spike, a played rate trace drawn under the measured rate."""
from __future__ import annotations

import csv

import jsonschema
import pytest
from altair.vegalite.v6.schema.core import load_schema

from app.traffic.form import TrafficForm, build_spec, with_trace_rate
from app.ui.live import live_charts as charts
from app.ui.live.live_charts import latency, spike_cap
from app.ui.live.live_frame import trace_line
from loadgen.rate_trace.shipped import SHIPPED

# Vega-Lite's own JSON schema, the one Altair validates a chart against (checked here without building Altair's objects)
VEGA_LITE = jsonschema.validators.validator_for(load_schema())(load_schema())
KINDS = ("throughput", "latency", "breakdown", "pending", "per_class", "batch_histogram")


@pytest.mark.parametrize(("kind", "zoom"), [(k, z) for k in KINDS for z in (False, True)
                                            if not (k == "batch_histogram" and z)])  # no time axis to zoom
def test_every_template_is_a_valid_vega_lite_spec(kind, zoom):
    assert not [e.message for e in VEGA_LITE.iter_errors(charts.template(kind, zoom))]


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
    assert not [e.message for e in VEGA_LITE.iter_errors(spec)]  # still a valid spec with its data


T0 = 1_700_000_000.0


def test_the_throughput_chart_draws_the_played_trace_under_the_measured_rate():
    spec = build_spec(with_trace_rate(TrafficForm(model="gpu_sim", mode="open", arrival="rate_trace",
                                                  trace="flash_crowd", compress=10.0)))
    with open(SHIPPED / "flash_crowd.csv", newline="") as f:
        rates = [float(r["rate"]) for r in csv.DictReader(f)]
    now = T0 + 150.0  # the chart's window: the last 60 s, recorded 900-1500 s (the crowd arrives at 1200)
    points = trace_line(spec, T0, now - 60, now)
    chart = charts.throughput([{"t": now - 1, "infer_rps": 300.0}], [], [], trace=points)
    drawn = chart["datasets"]["trace"]
    assert {r["series"] for r in drawn} == {charts.TRACE_SERIES}
    assert drawn[0]["time"] == (now - 60) * 1000 and drawn[-1]["time"] == now * 1000
    assert [r["value"] for r in drawn[:-1]] == pytest.approx(rates[90:150])  # one step a second, as recorded
    assert not [e.message for e in VEGA_LITE.iter_errors(chart)]  # still a valid spec with its data
    steady = TrafficForm(model="gpu_sim", mode="open", rate=100.0)
    assert trace_line(build_spec(steady), T0, now - 60, now) == []  # a steady load draws no trace
    assert trace_line(spec, None, now - 60, now) == []  # not sending yet
    assert charts.throughput([], [], [])["datasets"]["trace"] == []


def test_the_latency_chart_says_when_the_server_reports_no_quantile():
    load = [{"t": 1000.0 + i, "cls": "all", "p50_ms": 5.0, "p99_ms": 9.0, "latency_n": 100} for i in range(10)]
    off = latency([{"t": 1000.0 + i, "p50_us": None, "p99_us": None} for i in range(10)], load, [])
    on = latency([{"t": 1000.0 + i, "p50_us": 4000.0, "p99_us": 8000.0} for i in range(10)], load, [])
    assert all(line in str(off) for line in charts.SUMMARIES_OFF) and "60 s sliding summary" not in str(off)
    assert "60 s sliding summary" in str(on) and not any(line in str(on) for line in charts.SUMMARIES_OFF)
    spiked = load + [{"t": 1011.0, "cls": "all", "p50_ms": 5.0, "p99_ms": 9000.0, "latency_n": 100}]
    for spec in (off, on, latency([], spiked, [], sla_ms=50.0)):
        lines = spec["layer"][0]["layer"][0]["title"]["subtitle"]
        # a line wider than the half-width column squashes the plot (Vega's autosize fits title and plot together)
        assert all(len(line) <= charts.SUBTITLE_CHARS for line in lines), lines
