"""CSV exports of made-up studies read back from a real store, and the perf_analyzer command of a point (its flags
checked against the real perf_analyzer's --help: tests/contract/experiments/test_export.py)."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import replace

import pytest

from app.experiments.capture import capture
from app.experiments.report.export import _cell, config_file_name, perf_analyzer_command, points_csv, shell_line, windows_csv
from app.timeline.meter import MeasuredWindow, merged
from app.experiments.sweep.space import CONCURRENCY, RATE
from app.store.database import FAILED, Experiment, ExperimentStore
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures
from loadgen.spec import LoadSpec
from tests.unit.experiments import samples


def read(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.fixture
def stored(tmp_path):
    """A store holding a made-up sweep's points, a comparison's trials and a run saved without windows."""
    store = ExperimentStore(tmp_path / "exp.sqlite")
    space = samples.sweep_space(instances=(1,), delays_us=(0, 2000), include_default=False, loads=(2, 8))
    points = samples.sweep_points(space)
    for p in points:
        store.add_run(Experiment(p.key, "gpu_sim", p.config_text, p.t0, p.t1, client=p.figures.client_dicts(),
                             server=p.figures.server.to_dict(), kind="point", status=p.status, study_id=1, point=p.key,
                             windows=p.windows))
    ab = samples.ab_result(trials=2)
    for arm, per in ab.trials.items():
        for trial, f in per.items():
            store.add_run(Experiment(f"{arm} — trial {trial + 1}", "gpu_sim", "", f.figures.t0, f.figures.t1,
                                 client=f.figures.client_dicts(), server=f.figures.server.to_dict(), kind="trial",
                                 study_id=2, point=f"{arm}#{trial}", windows=f.windows))
    store.add_run(Experiment("saved by hand", "gpu_sim", "", 10.0, 20.0, client={"all": {"p99_ms": 5.0, "ok": 40}},
                         server={"avg_batch": 3.0}, study_id=3))
    return store, points, ab


def test_every_window_is_a_row_whose_figures_add_up_to_its_run(stored):
    store, points, _ = stored
    rows = read(windows_csv(store.runs(study_id=1)))
    assert len(rows) == sum(len(p.windows) for p in points)
    for p in points:
        mine = [r for r in rows if r["point"] == p.key]
        assert [r["window"] for r in mine] == [str(i + 1) for i in range(len(p.windows))]
        whole = merged([MeasuredWindow.from_dict(w) for w in p.windows]).figures()
        assert sum(int(r["client.all.ok"]) for r in mine) == whole.row().ok
        assert sum(float(r["server.request_count"]) for r in mine) == pytest.approx(whole.get("request_count"))
        assert float(mine[0]["t0"]) == p.t0 and float(mine[-1]["t1"]) == p.t1
    assert {"client.all.p99_ms", "client.default.p99_ms", "server.queue_us", "server.avg_batch"} <= set(rows[0])


def test_trials_are_numbered_from_one_and_a_run_without_windows_gives_its_totals(stored):
    store, _, ab = stored
    rows = read(windows_csv(store.runs(study_id=2)))
    assert {(r["arm"], r["trial"]) for r in rows} == {(a, t) for a in ab.trials for t in ("1", "2")}
    assert len(rows) == 2 * 2 * 3  # 2 arms × 2 trials × three 1 s windows
    (saved,) = read(windows_csv(store.runs(study_id=3)))
    assert (saved["window"], saved["seconds"], saved["client.all.p99_ms"], saved["server.avg_batch"]) == (
        "", "10.0", "5.0", "3.0")


def test_a_saved_run_gives_a_row_per_second_it_kept(tmp_path):
    seconds = [Figures("gpu_sim", 100.0 + s, 101.0 + s, ServerFigures(avg_batch=2.0 + s, request_count=50.0),
                       {"all": ClientFigures(p99_ms=4.0 + s, latency_n=50)}).to_dict() for s in range(3)]
    run = capture("run", "gpu_sim", "cfg", LoadSpec(), Figures("gpu_sim", 100.0, 103.0), seconds)
    store = ExperimentStore(tmp_path / "exp.sqlite")
    rows = read(windows_csv([store.run(store.add_run(run))]))
    assert [(r["t0"], r["seconds"], r["client.all.p99_ms"], r["server.avg_batch"]) for r in rows] == [
        ("100.0", "1.0", "4.0", "2.0"), ("101.0", "1.0", "5.0", "3.0"), ("102.0", "1.0", "6.0", "4.0")]


def test_points_csv_has_one_row_per_point_failed_ones_without_figures():
    points = samples.sweep_points()
    rows = read(points_csv(points))
    assert [r["point"] for r in rows] == [p.key for p in points]
    assert rows[0]["configuration"] == "1 instance, delay 0 µs"
    assert float(rows[0]["client.all.p99_ms"]) == points[0].p99
    failed = [r for r in rows if r["status"] == FAILED]
    assert len(failed) == 2 and all(r["client.all.p99_ms"] == "" and r["note"] for r in failed)
    assert {r["stable"] for r in rows if r["status"] != FAILED} == {"0", "1"}


def test_a_point_becomes_the_same_load_in_perf_analyzer_terms():
    closed = perf_analyzer_command("127.0.0.1:8000", "gpu_sim", CONCURRENCY, 8, 12.5)
    assert closed == ["perf_analyzer", "-m", "gpu_sim", "-u", "127.0.0.1:8000", "-i", "http", "--concurrency-range",
                      "8", "--percentile=99", "--measurement-interval", "5000", "--latency-threshold", "13"]
    opened = perf_analyzer_command("h:8001", "mlp", RATE, 250.5, None, protocol="grpc")
    assert opened[opened.index("--request-rate-range") + 1] == "250.5" and "--latency-threshold" not in opened
    assert opened[opened.index("--request-distribution") + 1] == "poisson" and opened[6] == "grpc"
    with pytest.raises(ValueError, match="protocol"):
        perf_analyzer_command("h:1", "m", CONCURRENCY, 1, None, protocol="https")
    with pytest.raises(ValueError, match="load_kind"):
        perf_analyzer_command("h:1", "m", "burst", 1, None)
    assert shell_line(["perf_analyzer", "-m", "a model; rm -rf /"]) == "perf_analyzer -m 'a model; rm -rf /'"


def test_config_file_names_are_safe():
    names = {config_file_name(p) for p in samples.sweep_points()}
    assert "config-i2-d2000.pbtxt" in names and all(re.fullmatch(r"config-[\w.-]+\.pbtxt", n) for n in names)


HOSTILE = ["=HYPERLINK(\"http://example.invalid\",\"x\")", "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("label", HOSTILE)
def test_a_cell_a_spreadsheet_would_run_stays_text_and_numbers_stay_numbers(tmp_path, label):
    store = ExperimentStore(tmp_path / "exp.sqlite")
    store.add_run(Experiment(label, "gpu_sim", "", 10.0, 20.0, client={label: {"p99_ms": -1.5, "ok": 40}},
                         server={"avg_batch": 3.0}, study_id=1, point=label))
    text = windows_csv(store.runs(study_id=1))
    (row,) = read(text)
    assert row["label"] == "'" + label and row["point"] == "'" + label, text
    assert f"client.{label}.p99_ms" in row  # a class name inside a column name does not start the cell
    assert row[f"client.{label}.p99_ms"] == "-1.5" and row[f"client.{label}.ok"] == "40", row  # numbers stay
    assert (row["t0"], row["seconds"], row["server.avg_batch"]) == ("10.0", "10.0", "3.0"), row
    point = samples.sweep_points()[0]
    (prow, *_) = read(points_csv([replace(point, note=label)]))
    assert prow["note"] == "'" + label and float(prow["client.all.p99_ms"]) == point.p99, prow
    cells = [c for r in csv.reader(io.StringIO(text, newline="")) for c in r]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r")) and not _number(c)], cells


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_a_header_that_would_run_stays_text():
    point = samples.sweep_points()[0]
    client = {"=cmd": {"p99_ms": 2.0}}
    text = points_csv([replace(point, figures=Figures.from_dict({"client": client, "server": {}}))])
    assert "client.=cmd.p99_ms" in text.splitlines()[0]  # starts with 'client.', so no prefix is needed
    assert _cell("=x") == "'=x" and _cell("-3") == "'-3" and _cell(-3) == -3 and _cell(2.5) == 2.5
    assert _cell("plain") == "plain" and _cell(float("nan")) == "" and _cell(None) == ""
