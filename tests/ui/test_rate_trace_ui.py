"""A rate trace in the dashboard: the traffic form's trace fields drawn by Streamlit, and the played trace as a step
line on the live throughput chart."""
from __future__ import annotations

import csv

import altair as alt
import pytest
from streamlit.testing.v1 import AppTest

from app.traffic.form import TrafficForm, build_spec, with_trace_rate
from app.ui.live import live_charts as charts
from app.ui.live.live_frame import trace_line
from loadgen.rate_trace.shipped import SHIPPED
from tests.ui.apptest import ok, widget

T0 = 1_700_000_000.0


def form_page() -> None:
    import streamlit as st  # noqa: PLC0415 - AppTest runs this function's body as the page

    from app.traffic.form import TrafficForm, problems  # noqa: PLC0415
    from app.ui.traffic.traffic_panel import _form  # noqa: PLC0415

    form = _form(TrafficForm(model="gpu_sim", mode="open"), "t")
    st.session_state["form"] = form
    st.session_state["problems"] = problems(form)


def test_the_form_offers_a_rate_trace_and_says_what_it_plays():
    at = ok(AppTest.from_function(form_page, default_timeout=30).run())
    widget(at.selectbox, "Arrivals").select("rate_trace")
    ok(at.run())
    form = at.session_state["form"]
    assert (form.arrival, form.trace, form.compress) == ("rate_trace", "flash_crowd", 6.0)
    with open(SHIPPED / "flash_crowd.csv", newline="") as f:
        mean = sum(float(r["rate"]) for r in csv.DictReader(f)) / 360
    assert form.rate == pytest.approx(mean, rel=1e-5) and at.session_state["problems"] == []
    said = " ".join(c.value for c in at.caption)
    assert "1 h at 10 s steps" in said and "10 min" in said and f"{mean:,.1f} req/s" in said, said
    assert widget(at.number_input, "Stop after s").disabled  # the trace's played span bounds the run
    widget(at.number_input, "Scale (rate ×)").set_value(2.0)
    ok(at.run())
    assert at.session_state["form"].rate == pytest.approx(2 * mean, rel=1e-5)


def test_a_bad_trace_file_is_a_problem_of_the_form_not_a_crash(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,rps\n0,1\n")
    at = ok(AppTest.from_function(form_page, default_timeout=30).run())
    widget(at.selectbox, "Arrivals").select("rate_trace")
    ok(at.run())
    widget(at.radio, "Trace").set_value("file")
    ok(at.run())
    assert any("choose a shipped trace" in p for p in at.session_state["problems"])
    widget(at.text_input, "Rate file: CSV t,rate[,class], JSON, or perf_analyzer request intervals").input(str(bad))
    ok(at.run())
    assert any("the first line must be t,rate" in p for p in at.session_state["problems"]), \
        at.session_state["problems"]
    widget(at.number_input, "Compress (recorded s per played s)").set_value(-3.0)
    ok(at.run())
    assert at.session_state["problems"], "a negative compress must be refused"
    widget(at.radio, "Trace").set_value("Prometheus")
    ok(at.run())
    widget(at.text_input, "Prometheus URL").input("not a url")
    widget(at.button, "Import").click()
    at.run()
    said = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown marks escaped as typed
    assert not at.exception and "Not imported" in said and "write http:// or https://" in said, said


def test_the_live_throughput_chart_draws_the_played_trace_under_the_measured_rate():
    spec = build_spec(with_trace_rate(TrafficForm(model="gpu_sim", mode="open", arrival="rate_trace",
                                                  trace="flash_crowd", compress=10.0)))
    with open(SHIPPED / "flash_crowd.csv", newline="") as f:
        rates = [float(r["rate"]) for r in csv.DictReader(f)]
    now = T0 + 150.0  # the chart's window: the last 60 s, recorded 900-1500 s (the crowd arrives at 1200)
    points = trace_line(spec, T0, now - 60, now)
    spec_chart = charts.throughput([{"t": now - 1, "infer_rps": 300.0}], [], [], trace=points)
    drawn = spec_chart["datasets"]["trace"]
    assert {r["series"] for r in drawn} == {charts.TRACE_SERIES}
    assert drawn[0]["time"] == (now - 60) * 1000 and drawn[-1]["time"] == now * 1000
    assert [r["value"] for r in drawn[:-1]] == pytest.approx(rates[90:150])  # one step a second, as recorded
    alt.LayerChart.from_dict(spec_chart)  # still a valid spec with its data
    steady = TrafficForm(model="gpu_sim", mode="open", rate=100.0)
    assert trace_line(build_spec(steady), T0, now - 60, now) == []  # a steady load draws no trace
    assert trace_line(spec, None, now - 60, now) == []  # not sending yet
    assert charts.throughput([], [], [])["datasets"]["trace"] == []
