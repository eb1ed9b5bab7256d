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
