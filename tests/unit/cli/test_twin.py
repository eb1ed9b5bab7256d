"""The twin's command line refuses, before its probe, what it cannot answer for: an ensemble (its steps have the
queues), sequence batching, and a knob the model cannot take (the sweep's offer) — never a prediction that quietly
leaves the knob out."""
from __future__ import annotations

from argparse import Namespace

import pytest

from app.cli.twin import knobs_refused
from app.config.model_config import parse_config
from app.paths import MODEL_REPOSITORY
from tests.third_party import SOURCE


def served(folder):
    return parse_config((folder / "config.pbtxt").read_text())


def args(model, instances=(), delay_us=(), max_batch_size=()):
    return Namespace(model=model, instances=instances, delay_us=delay_us, max_batch_size=max_batch_size)


@pytest.mark.parametrize("model, folder, knobs, words", [
    ("pipeline", SOURCE / "pipeline", {}, "pipeline is an ensemble: each request runs pipe_scale → pipe_offset"),
    ("pipeline", SOURCE / "pipeline", {"instances": (2,)}, "tune a step instead"),
    ("stream_acc", MODEL_REPOSITORY / "stream_acc", {}, "this model uses sequence batching"),
    ("two_inputs", SOURCE / "two_inputs", {"delay_us": (500,)}, "--delay-us: it serves max_batch_size 0"),
])
def test_what_it_cannot_answer_for_is_refused_with_the_reason(model, folder, knobs, words):
    said = knobs_refused(args(model, **knobs), served(folder))
    assert words in said, said


@pytest.mark.parametrize("model, folder, knobs", [
    ("two_inputs", SOURCE / "two_inputs", {"instances": (1, 2)}),
    ("two_inputs", SOURCE / "two_inputs", {"delay_us": (500,), "max_batch_size": (8,)}),  # a delay with a batch dim
    ("pipe_scale", SOURCE / "pipe_scale", {"instances": (2,), "delay_us": (0, 500)}),  # a step: every knob
    ("text_len", SOURCE / "text_len", {"instances": (1, 3), "delay_us": (2000,)}),
])
def test_what_it_can_answer_for_passes(model, folder, knobs):
    assert knobs_refused(args(model, **knobs), served(folder)) == ""


@pytest.mark.parametrize("argv, words", [
    (["--instances", "0", "--rate", "100"], "--instances: 0 is under 1"),
    (["--rate", "0"], "--rate: 0 req/s; a rate must be positive"),
    (["--concurrency", "0"], "--concurrency: 0 is under 1"),
    (["--rate", "100", "--replications", "0"], "--replications: 0"),
    (["--rate", "100", "--report", "r.html"], "--report and --label are for studies"),
])
def test_wrong_arguments_are_refused_before_any_server_starts(argv, words, monkeypatch):
    from app.cli import headless
    from app.cli.studies import main

    def no_server(*_, **__):
        raise AssertionError("a server was started for arguments that were refused")
    monkeypatch.setattr(headless, "headless_lab", no_server)
    from app.cli.studies import parser
    from app.cli.twin import refused_before_start

    said = refused_before_start(parser().parse_args(["predict", "--model", "gpu_sim", *argv]))
    assert words in said, said
    assert main(["predict", "--model", "gpu_sim", *argv]) == 2  # no server started (no_server would raise)


def test_a_prediction_reads_as_rounded_json_and_a_line_for_a_person():
    from app.cli.twin import _entry, _line
    from app.twin import Calibration, Load, Window, predict, saturation
    from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings

    window = Window(1, tuple((b, 400, round(400 * t * 1e3)) for b, t in {1: 4000, 4: 5300, 8: 6900}.items()), 400 * 13)
    cal = Calibration((window,), client_overhead_us=400.0)
    settings = ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(1),),
                             dynamic_batching=DynamicBatching((4, 8), 0))
    limit = saturation(cal, settings).value
    load = Load.poisson(2 * limit, 5.0)
    entry = _entry({"instance_count": 1}, load, 2 * limit, True, predict(cal, settings, load, replications=2),
                   saturation(cal, settings))
    assert entry["overloaded"] is True and entry["load"]["arrival"] == "poisson", entry["load"]
    assert all(len(f"{v:.10g}".replace(".", "").lstrip("0")) <= 4 for v in entry["prediction"]["p99_ms"].values())
    assert set(entry["prediction"]["histogram"]) <= {str(b) for b in range(1, 9)}, entry["prediction"]["histogram"]
    line = _line(entry)
    assert line.startswith("instance_count=1 @ ") and "OVERLOADED" in line and "saturates at" in line, line


def test_a_twin_ranked_sweeps_summary_sets_each_measured_prediction_beside_its_measurement():
    from types import SimpleNamespace

    from app.cli.output import sweep_summary
    from app.experiments.sweep.sweeper import SweepOptions
    from tests.unit.ui.studies import study_samples

    space = study_samples.sweep_space()
    result = SimpleNamespace(space=space, best=None, points=[], status="done", wall_s=18.0, note="",
                             recommendation=None, study_id=3, skipped=[])
    twin = [{"choice": "i3-d0", "label": "3 instances, delay 0 µs", "load": 16, "predicted_goodput_rps": 893.0,
             "measured": True, "measured_load": 16, "measured_goodput_rps": 755.0},
            {"choice": "i1-d0", "label": "1 instance, delay 0 µs", "load": 8, "predicted_goodput_rps": 400.0,
             "measured": False}]
    data, lines = sweep_summary(result, SweepOptions(), "embedded", 0, twin)
    assert data["twin"] == twin
    said = [line for line in lines if line.startswith("the twin's #")]
    assert said == ["the twin's #1, 3 instances, delay 0 µs: predicted 893 req/s at concurrency 16, measured 755 at "
                    "concurrency 16 (+18%)"], lines
