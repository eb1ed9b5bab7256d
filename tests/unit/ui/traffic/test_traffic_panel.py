"""The traffic panel (app/ui/traffic/traffic_panel.py) on the FakeLab: Start, Update live and Stop drive the lab's one
load generator (marked on the charts), the form starts from what runs, a value out of range is refused in words,
a model's own inputs get their fields, a rate trace is chosen and played."""
from __future__ import annotations

import csv

import pytest

from app.metrics.catalog import label
from app.traffic.form import TrafficForm, build_spec
from app.ui.traffic.traffic_panel import status_rows
from loadgen.rate_trace.shipped import SHIPPED
from loadgen.spec import ArrivalSpec, LoadSpec, Mode
from tests.unit.ui.apptest import metric, no_exception, ok, open_page, texts, widget

PAGE = "lab_pages/dynamic_batching.py"


def traffic_markers(lab, model: str = "gpu_sim") -> list[str]:
    return [m.text.split(":")[0] for m in lab.markers(model) if m.kind == "traffic"]


def test_start_update_and_stop_drive_the_one_generator_and_mark_the_charts(on_fake):
    at = open_page(PAGE)
    assert at.button(key="dynamic:traffic:stop").disabled and at.button(key="dynamic:traffic:update").disabled
    widget(at.slider, "Concurrency").set_value(2).run()
    ok(at.button(key="dynamic:traffic:start").click().run())
    assert on_fake.traffic().running and on_fake.traffic().spec.concurrency == 2
    assert at.button(key="dynamic:traffic:start").disabled and metric(at, "traffic") == "running"
    assert any(i.startswith("**Running** against `gpu_sim`") and "concurrency 2" in i for i in texts(at.info))
    widget(at.slider, "Concurrency").set_value(4).run()
    ok(at.button(key="dynamic:traffic:update").click().run())
    assert on_fake.traffic().spec.concurrency == 4
    ok(at.button(key="dynamic:traffic:stop").click().run())
    assert not on_fake.traffic().running and metric(at, "traffic") == "stopped"
    assert traffic_markers(on_fake)[-3:] == ["traffic start", "traffic update", "traffic stop"]


def test_the_form_starts_from_what_runs(on_fake):
    on_fake.start_traffic(LoadSpec(model="gpu_sim", mode=Mode.OPEN, rate=120.0, arrival=ArrivalSpec(kind="mmpp"),
                                   duration_s=60.0))
    at = open_page(PAGE)  # its preset is closed loop, concurrency 16
    assert widget(at.radio, "Load").value == "open"
    assert widget(at.number_input, "Rate (req/s)").value == 120.0
    assert widget(at.selectbox, "Arrivals").value == "mmpp"
    assert any("open loop, mmpp arrivals at 120 req/s" in i for i in texts(at.info)), texts(at.info)


def test_a_rate_out_of_range_is_refused_in_words_and_start_stays_off(on_fake):
    at = open_page("lab_pages/priority.py")  # open loop preset
    no_exception(widget(at.number_input, "Rate (req/s)").set_value(50000.0).run())
    assert texts(at.error) == ["Not accepted: rate (req/s) must be between 1 and 5000; 50000.0 was typed."]
    assert at.button(key="priority:traffic:start").disabled


def test_a_shipped_rate_trace_says_what_it_plays_and_plays_it(on_fake):
    at = open_page(PAGE)
    widget(at.radio, "Load").set_value("open").run()
    ok(widget(at.selectbox, "Arrivals").set_value("rate_trace").run())
    with open(SHIPPED / "flash_crowd.csv", newline="") as f:
        mean = sum(float(r["rate"]) for r in csv.DictReader(f)) / 360
    said = " ".join(texts(at.caption))
    assert "1 h at 10 s steps" in said and "10 min" in said and f"{mean:,.1f} req/s" in said, said
    assert widget(at.number_input, "Stop after s").disabled  # the trace's played span bounds the run
    ok(widget(at.number_input, "Scale (rate ×)").set_value(2.0).run())
    ok(at.button(key="dynamic:traffic:start").click().run())
    spec = on_fake.traffic().spec
    assert (spec.arrival.kind, spec.arrival.rate_trace, spec.arrival.compress) == ("rate_trace", "flash_crowd", 6.0)
    assert spec.rate == pytest.approx(2 * mean, rel=1e-5)


def test_a_bad_trace_file_or_prometheus_address_is_refused_in_words(on_fake, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,rps\n0,1\n")
    at = open_page(PAGE)
    widget(at.radio, "Load").set_value("open").run()
    widget(at.selectbox, "Arrivals").set_value("rate_trace").run()
    no_exception(widget(at.radio, "Trace").set_value("file").run())
    assert any("choose a shipped trace" in e for e in texts(at.error)), texts(at.error)
    no_exception(widget(at.text_input, "Rate file: CSV t,rate[,class], JSON, or perf_analyzer request intervals")
                 .input(str(bad)).run())
    assert any("the first line must be t,rate" in e for e in texts(at.error)), texts(at.error)
    assert at.button(key="dynamic:traffic:start").disabled
    widget(at.radio, "Trace").set_value("Prometheus").run()
    widget(at.text_input, "Prometheus URL").input("not a url")
    no_exception(widget(at.button, "Import").click().run())
    said = " ".join(texts(at.error))
    assert "Not imported" in said and "write http:// or https://" in said, said


def test_a_models_own_inputs_get_a_shape_field_a_send_box_or_none(on_third_party, tmp_path):
    at = open_page(PAGE)
    ok(at.selectbox(key="dynamic:model").set_value("var_dims").run())
    sends = lambda: next(d.value for d in at.dataframe if "sends" in d.value.columns)["sends"].tolist()  # noqa: E731
    assert sends() == ["[1, 1]", "not sent"]
    widget(at.text_input, "Shape of VALUES [-1], without batch").input("16")
    ok(widget(at.checkbox, "Send the optional input SCALE").check().run())
    assert sends() == ["[1, 16]", "[1, 1]"]
    no_exception(widget(at.text_input, "Shape of VALUES [-1], without batch").input("4,4").run())
    assert any("does not fit input VALUES" in e for e in texts(at.error)), texts(at.error)
    ok(widget(at.text_input, "Shape of VALUES [-1], without batch").input("16").run())
    ok(at.button(key="dynamic:traffic:start").click().run())
    assert on_third_party.traffic().running and on_third_party.traffic().spec.model == "var_dims"
    on_third_party.stop_traffic()
    ok(at.selectbox(key="dynamic:model").set_value("two_inputs").run())
    assert not [w for w in at.text_input if w.label.startswith("Shape of")] and not [
        c for c in at.checkbox if c.label.startswith("Send the optional")]
    assert sends() == ["[4]", "[2]"]
    widget(at.text_input, "Input data: a perf_analyzer JSON file or a folder of .npy files (empty: random values)"
           ).input(str(tmp_path))
    ok(at.run())
    assert sends() == ["from the data", "from the data"]


def test_the_status_table_shows_sends_late_and_sends_the_generator_fell_behind_on():
    spec = build_spec(TrafficForm(model="gpu_sim", mode="open", rate=100.0))
    window = {"default": {"seconds": 9, "offered_rps": 100.0, "throughput_rps": 99.0, "late": 40, "behind": 3}}
    row = status_rows(spec, window, {})[0]
    assert (row["class"], row[label("late")], row[label("behind")]) == ("default", 40, 3), row
    assert label("behind") == "sends over 10 ms late (requests)"


def test_the_page_is_drawn_again_when_another_run_takes_the_forms_place_once_no_job_runs():
    from app.ui.traffic.traffic_panel import redraw_needed

    idle, busy = (lambda: False), (lambda: True)
    assert not redraw_needed(True, 4, True, 4, idle)  # the run the form shows
    assert redraw_needed(True, 4, False, 4, idle) and redraw_needed(False, 4, True, 5, busy)  # ended, started
    # a probe ran its levels and the traffic before it runs again: the form showed its last level
    assert redraw_needed(True, 4, True, 9, idle)
    assert not redraw_needed(True, 4, True, 9, busy)  # not at each of a job's runs: once it has ended
    assert not redraw_needed(True, None, True, 9, idle)  # a status without a form
