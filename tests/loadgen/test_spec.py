"""LoadSpec: defaults, validation, YAML loading, shapes and sequence lengths."""
from __future__ import annotations

import json
from random import Random

import pytest

from loadgen.inputs.shapes import LengthSpec, ShapeSpec, fill
from loadgen.spec import (ArrivalKind, ArrivalSpec, InputSpec, LoadSpec, Mode, RetryKind, RetryPolicy,
                          TrafficClass)
from loadgen.specfile import load_spec, spec_from_dict, spec_to_dict

YAML = """
mode: open
rate: 300
arrival: {kind: bursty, on_s: 0.5, off_s: 1.5}
duration_s: 20
classes:
  - {name: interactive, share: 0.2, priority: 1, timeout_ms: 100, sla_ms: 50,
     retry: {kind: backoff, max_attempts: 4, cap_ms: 500}}
  - {name: batch, share: 0.8, priority: 2, shape: {kind: uniform, dims: [-1], low: 8, high: 64}}
  - {name: probe, model: mlp, rate: 5, arrival: {kind: constant}}
sequences:
  - {model: stream_acc, count: 3, length: {kind: uniform, low: 2, high: 6}}
"""


def test_defaults_are_a_runnable_closed_loop():
    spec = LoadSpec()
    assert spec.mode is Mode.CLOSED and spec.concurrency == 8 and spec.duration_s == 10.0
    assert spec.class_model(spec.classes[0]) == "gpu_sim"


def test_yaml_spec_loads_every_part(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(YAML)
    spec = load_spec(path, duration_s=5)
    assert spec.mode is Mode.OPEN and spec.arrival.kind is ArrivalKind.BURSTY and spec.duration_s == 5
    inter, batch, probe = spec.classes
    assert inter.retry == RetryPolicy(RetryKind.BACKOFF, max_attempts=4, cap_ms=500)
    assert batch.shape.dims == (-1,) and batch.shape.lengths()[:2] == [8, 9]
    assert probe.rate == 5.0 and probe.arrival.kind is ArrivalKind.CONSTANT and spec.class_model(probe) == "mlp"
    assert spec.sequences[0].length == LengthSpec("uniform", low=2, high=6)


def test_spec_round_trips_through_json():
    spec = spec_from_dict({"mode": "open", "arrival": {"kind": "step", "steps": [[1, 2], [3, 4]]}})
    again = spec_from_dict(json.loads(json.dumps(spec_to_dict(spec))))
    assert again == spec and again.arrival.steps == ((1.0, 2.0), (3.0, 4.0))


@pytest.mark.parametrize(
    "data, message",
    [
        ({"mode": "sideways"}, "mode must be one of"),
        ({"classez": []}, "unknown field"),
        ({"classes": [{"name": "a"}, {"name": "a"}]}, "unique"),
        ({"classes": [{"share": 0}]}, "positive total share"),
        ({"classes": [], "sequences": []}, "at least one"),
        ({"duration_s": 0}, "positive"),
        ({"arrival": {"kind": "trace"}}, "trace file"),
        ({"classes": [{"retry": {"max_attempts": 0}}]}, "at least 1"),
    ],
)
def test_invalid_specs_explain_themselves(data, message):
    with pytest.raises(ValueError, match=message):
        spec_from_dict(data)


def test_shapes_fill_the_variable_dimension():
    assert fill((-1, 4), 3) == (3, 4) and fill((256,), 3) == (256,)
    assert ShapeSpec("choice", dims=(-1, 4), choices=(2, 3)).lengths() == [2, 3]
    assert len(ShapeSpec("uniform", low=1, high=10_000).lengths()) == 256
    assert ShapeSpec().lengths() == []  # fixed: one variant
    with pytest.raises(ValueError, match="at least 1"):
        ShapeSpec(batch=0)


def test_buckets_pad_each_length_up_to_the_smallest_bucket_that_holds_it():
    shape = ShapeSpec("uniform", dims=(-1,), low=1, high=8, buckets=(8, 4))
    assert shape.lengths() == [4, 4, 4, 4, 8, 8, 8, 8]  # each padded length as often as the lengths it holds
    assert shape.describe() == "1..8 padded to 4|8"
    assert ShapeSpec("choice", choices=(3, 9), buckets=(16,)).lengths() == [16, 16]
    with pytest.raises(ValueError, match="hold the longest length"):
        ShapeSpec("uniform", low=1, high=300, buckets=(64, 256))
    with pytest.raises(ValueError, match="uniform or choice"):
        ShapeSpec(buckets=(64,))


def test_inputs_are_named_by_their_keys_in_yaml_and_round_trip(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("""
model: var_dims
classes:
  - name: long
    inputs: {VALUES: {dims: [16]}, SCALE: {send: true}}
    string_len: [0, 64]
  - {name: real, data: inputs.json, shape: {batch: 4}}
""")
    spec = load_spec(path)
    long, real = spec.classes
    assert long.inputs == (InputSpec("VALUES", dims=(16,)), InputSpec("SCALE", send=True))
    assert long.input("SCALE").send is True and long.input("OTHER") is None and long.string_len == (0, 64)
    assert real.data == "inputs.json" and real.shape.batch == 4 and real.string_len == (1, 16)
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec  # the worker's pipe: a list of inputs


@pytest.mark.parametrize(
    "cls, message",
    [
        ({"inputs": {"VALUES": [16]}}, r"classes\[0\].inputs.VALUES: expected a mapping of fields"),
        ({"inputs": {"VALUES": {"name": "SCALE"}}}, "the key names it 'VALUES'"),
        ({"inputs": [{"name": "A"}, {"name": "A"}]}, "each input is named once"),
        ({"inputs": {"A": {"dims": [0]}}}, "input A: dims must be positive"),
        ({"inputs": {"A": {"colour": 1}}}, "unknown field"),
        ({"string_len": [5, 2]}, "string_len needs 0 <= low <= high"),
        ({"data": "d.json", "inputs": {"A": {"dims": [3]}}}, "data .d.json. gives every tensor"),
        ({"data": "d.json", "shape": {"kind": "uniform"}}, "drop inputs and shape dims/lengths"),
    ],
)
def test_invalid_inputs_explain_themselves(cls, message):
    with pytest.raises(ValueError, match=message):
        spec_from_dict({"classes": [cls]})


def test_sequence_lengths_follow_their_distribution():
    rng = Random(0)
    assert LengthSpec("fixed", n=7).sample(rng) == 7
    uniform = [LengthSpec("uniform", low=2, high=4).sample(rng) for _ in range(3000)]
    assert set(uniform) == {2, 3, 4}
    geometric = [LengthSpec("geometric", n=5).sample(rng) for _ in range(20_000)]
    assert min(geometric) == 1 and sum(geometric) / len(geometric) == pytest.approx(5.0, rel=0.05)


def test_frozen():
    with pytest.raises(AttributeError):
        ArrivalSpec().kind = "poisson"  # type: ignore[misc]
    assert TrafficClass().retry.kind is RetryKind.NONE
