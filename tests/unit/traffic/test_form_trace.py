"""The traffic form's rate trace: form ↔ spec, problems in words, the rate it asks in a window (target rate, the
generator-behind rule), its played curve on the wall clock, and a Prometheus import saved as a file."""
from __future__ import annotations

import csv

import pytest

from app.traffic.form import (TrafficForm, build_spec, class_targets, form_from_spec, form_trace_text, import_prometheus,
                         keep_up_warning, problems, target_rate, with_trace_rate)
from loadgen.rate_trace.files import read_rate_csv
from loadgen.rate_trace.shipped import SHIPPED
from loadgen.rate_trace.wall_clock import asked_rate, played_points
from loadgen.spec import ArrivalKind, Mode
from loadgen.stats import ALL

T0 = 1_700_000_000.0  # the run's start (epoch s)


def flash_rows() -> list[tuple[float, float]]:
    with open(SHIPPED / "flash_crowd.csv", newline="") as f:
        return [(float(r["t"]), float(r["rate"])) for r in csv.DictReader(f)]


def mean_of(rows) -> float:
    return sum(r for _, r in rows) / len(rows)


def trace_form(**kw) -> TrafficForm:
    return TrafficForm(model="gpu_sim", mode="open", arrival="rate_trace", **kw)


def test_the_form_plays_a_shipped_trace_at_its_played_mean_for_its_played_span():
    form = with_trace_rate(trace_form(trace="flash_crowd", compress=6.0, scale=0.5, mix="interactive + batch"))
    assert form.rate == pytest.approx(mean_of(flash_rows()) * 0.5, rel=1e-5)
    assert problems(form) == []
    spec = build_spec(form)
    assert spec.mode is Mode.OPEN and spec.arrival.kind is ArrivalKind.RATE_TRACE
    assert (spec.arrival.rate_trace, spec.arrival.compress, spec.duration_s) == ("flash_crowd", 6.0, 600.0)
    assert spec.rate == pytest.approx(form.rate) and [c.name for c in spec.classes] == ["interactive", "batch"]
    back = form_from_spec(spec, TrafficForm(model="x"))
    assert (back.arrival, back.trace, back.compress, back.scale, back.mix) == (
        "rate_trace", "flash_crowd", 6.0, 0.5, "interactive + batch")
    text = form_trace_text(form)
    assert "1 h at 10 s steps" in text and "10 min" in text and "mean 67.6 req/s" in text, text


@pytest.mark.parametrize(("fields", "words"), [
    (dict(trace=""), "choose a shipped trace"),
    (dict(trace="/nowhere/rates.csv"), "No such file"),
    (dict(trace="flash_crowd", compress=0.0), "compress = 0.0"),
    (dict(trace="flash_crowd", compress=6.0, scale=100.0), "scale 100 plays a rate"),
    (dict(trace="diurnal", compress=1.0), "use compress 24 or more"),
    (dict(trace="flash_crowd", trace_class="vip"), "no class 'vip'"),
])
def test_a_bad_trace_is_the_forms_problem_and_never_an_exception(fields, words):
    form = with_trace_rate(trace_form(**fields))
    wrong = problems(form)
    assert any(words in p for p in wrong), wrong
    with pytest.raises(ValueError) as info:
        build_spec(form)
    assert words in str(info.value), info.value
    assert form_trace_text(form)  # the words, not a crash


def test_a_trace_ignores_the_forms_flat_rate_and_duration_bounds():
    form = with_trace_rate(trace_form(trace="flash_crowd", compress=600.0, duration_s=1.0))  # plays 6 s
    assert problems(form) == [] and build_spec(form).duration_s == pytest.approx(6.0)


def test_played_points_are_the_steps_on_the_wall_clock_cut_to_the_window():
    rows = flash_rows()
    spec = build_spec(with_trace_rate(trace_form(trace="flash_crowd", compress=10.0)))  # a 10 s step plays 1 s
    points = played_points(spec.arrival, spec.rate, T0, T0 + 119.5, T0 + 130.0)
    assert points[0] == (T0 + 119.5, pytest.approx(rows[119][1]))  # the step in force at the window's start
    assert [t - T0 for t, _ in points[1:-1]] == pytest.approx([float(s) for s in range(120, 130)])
    assert [r for _, r in points[1:-1]] == pytest.approx([r for _, r in rows[120:130]])
    assert points[-1][0] == T0 + 130.0
    assert played_points(spec.arrival, spec.rate, T0, T0 - 50, T0 - 10) == []  # before the run
    assert played_points(spec.arrival, spec.rate, T0, T0 + 400, T0 + 500) == []  # after the trace


def test_the_target_rate_of_a_trace_is_what_it_asked_in_the_window():
    rows = flash_rows()
    spec = build_spec(with_trace_rate(trace_form(trace="flash_crowd", compress=10.0, mix="interactive + batch",
                                                 interactive_share=0.25)))
    steady = sum(r for _, r in rows[:100]) / 100  # recorded 0-1000 s: played 0-100 s
    crowd = sum(r for _, r in rows[125:150]) / 25  # recorded 1250-1500 s: played 125-150 s
    assert target_rate(spec) == pytest.approx(mean_of(rows), rel=1e-5)  # no window: the played mean
    assert target_rate(spec, (T0, T0 + 100), T0) == pytest.approx(steady, rel=1e-6)
    assert target_rate(spec, (T0 + 125, T0 + 150), T0) == pytest.approx(crowd, rel=1e-6)
    assert crowd > 4 * steady
    inter = class_targets(spec, (T0 + 125, T0 + 150), T0)["interactive"]
    assert inter == pytest.approx(0.25 * crowd, rel=1e-6)
    # a window half before the start: the mean over the part played (the client rows divide by it too)
    assert target_rate(spec, (T0 - 10, T0 + 10), T0) == pytest.approx(sum(r for _, r in rows[:10]) / 10, rel=1e-6)
    assert target_rate(spec, (T0 + 400, T0 + 410), T0) == 0.0  # after the trace: nothing asked
    assert asked_rate(spec.arrival, spec.rate, T0, T0 + 400, T0 + 410) is None


def behind_window(span: tuple[float, float]) -> dict:
    return {ALL: {"requests": 400, "behind": 200, "seconds": 10, "span": span}}


def test_the_generator_behind_rule_judges_a_trace_by_what_it_asked_in_the_span(tmp_path):
    path = tmp_path / "gap.csv"  # traffic, then 10 minutes of none, then traffic again
    path.write_text("t,rate\n0,100\n60,0\n660,100\n720,100\n")
    spec = build_spec(with_trace_rate(trace_form(trace=str(path), compress=60.0)))  # 13 s played
    assert "not keeping up" in keep_up_warning(spec, behind_window((T0, T0 + 1)), min_seconds=0, started_at=T0)
    assert keep_up_warning(spec, behind_window((T0 + 2, T0 + 10)), min_seconds=0, started_at=T0) is None
    assert "not keeping up" in keep_up_warning(spec, behind_window((T0 + 2, T0 + 10)), min_seconds=0)  # flat mean


class FakeResponse:
    def __init__(self, body: dict) -> None:
        self.body, self.status_code = body, 200

    def json(self) -> dict:
        return self.body


class FakeClient:  # pure logic: the request and the file; the real Prometheus is in tests/contract/metrics
    def __init__(self, body: dict) -> None:
        self.body, self.asked = body, []

    def get(self, url, params=None, timeout=None):
        self.asked.append((url, params))
        return FakeResponse(self.body)


def test_a_prometheus_import_is_saved_as_a_rate_file_a_load_names(tmp_path):
    values = [[T0 + 60 * i, str(r)] for i, r in enumerate((10, 20, 40, 20))]
    client = FakeClient({"status": "success", "data": {"resultType": "matrix",
                                                       "result": [{"metric": {}, "values": values}]}})
    path, trace = import_prometheus("http://prom:9090", "sum(rate(x[1m]))", T0, T0 + 180, "1m", tmp_path / "traces",
                                    client=client, now=T0)
    assert client.asked[0][0] == "http://prom:9090/api/v1/query_range" and client.asked[0][1]["step"] == "60"
    assert path.parent == tmp_path / "traces" and read_rate_csv(path).rates == trace.rates == (10, 20, 40, 20)
    spec = build_spec(with_trace_rate(trace_form(trace=str(path), compress=60.0)))
    assert spec.rate == pytest.approx(22.5) and spec.duration_s == pytest.approx(4.0)


def test_a_refused_prometheus_query_is_a_trace_error_in_words(tmp_path):
    client = FakeClient({"status": "error", "errorType": "bad_data", "error": "parse error at char 5"})
    with pytest.raises(ValueError, match="Prometheus refused the query.*parse error"):
        import_prometheus("http://prom:9090", "sum(", T0, T0 + 60, "15s", tmp_path, client=client)
    with pytest.raises(ValueError, match="write http:// or https://"):
        import_prometheus("prom:9090", "up", T0, T0 + 60, "15s", tmp_path, client=client)
    assert not list(tmp_path.iterdir())  # nothing saved
    assert len(client.asked) == 1  # the bad URL is refused before anything is asked
