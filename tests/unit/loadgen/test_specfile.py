"""Spec files: YAML with every part, inputs named by their keys, the JSON round trip the worker's pipe uses, and the
example specs shipped in loadgen/examples."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.inputs.shapes import LengthSpec
from loadgen.spec import ArrivalKind, InputSpec, Mode, RetryKind, RetryPolicy
from loadgen.specfile import load_spec, spec_from_dict, spec_to_dict

EXAMPLES = Path(__file__).resolve().parents[3] / "loadgen" / "examples"
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


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_specs_load(path):
    spec = load_spec(path)
    assert spec.classes or spec.sequences
