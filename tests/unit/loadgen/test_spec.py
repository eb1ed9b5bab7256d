"""LoadSpec: defaults, validation in words, frozen parts."""
from __future__ import annotations

import pytest

from loadgen.spec import ArrivalSpec, LoadSpec, Mode, RetryKind, TrafficClass
from loadgen.specfile import spec_from_dict


def test_defaults_are_a_runnable_closed_loop():
    spec = LoadSpec()
    assert spec.mode is Mode.CLOSED and spec.concurrency == 8 and spec.duration_s == 10.0
    assert spec.class_model(spec.classes[0]) == "gpu_sim"


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


def test_frozen():
    with pytest.raises(AttributeError):
        ArrivalSpec().kind = "poisson"  # type: ignore[misc]
    assert TrafficClass().retry.kind is RetryKind.NONE
