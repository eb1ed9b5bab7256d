"""What each request carries, without a server: defaults from the served config, per-input shapes, optional inputs,
strings, wrong shapes named with their fix, a request over the limits refused before it is made."""
from __future__ import annotations

import numpy as np
import pytest

from loadgen.inputs.metadata import ModelInfo
from loadgen.inputs.shapes import ShapeSpec
from loadgen.inputs.tensors import plan_inputs, sent_shape, tensor_variants
from loadgen.spec import InputSpec, TrafficClass
from tests.unit.loadgen.inputs.models import IMAGE, TEXT, TWO, VAR


def shapes(tc: TrafficClass, info: ModelInfo) -> list[dict]:
    return [{n: a.shape for n, _, a in t} for t in tensor_variants(tc, info, np.random.default_rng(0))]


def test_defaults_come_from_the_served_config():
    assert shapes(TrafficClass(), VAR) == [{"VALUES": (1, 1)}]  # a -1 nobody sized is 1; SCALE optional: not sent
    assert shapes(TrafficClass(), TWO) == [{"A": (4,), "B": (2,)}]  # no batching: no batch dimension
    assert shapes(TrafficClass(shape=ShapeSpec(batch=3)), IMAGE) == [{"IMAGE": (3, 3, 1, 1), "MASK": (3, 1)}]


def test_each_input_takes_its_own_dims_and_the_class_length_fills_the_minus_ones_left():
    tc = TrafficClass(inputs=(InputSpec("IMAGE", dims=(3, 224, -1)),), shape=ShapeSpec("choice", choices=(8, 16)))
    assert shapes(tc, IMAGE) == [{"IMAGE": (1, 3, 224, 8), "MASK": (1, 8)}, {"IMAGE": (1, 3, 224, 16), "MASK": (1, 16)}]
    plan = plan_inputs(tc, IMAGE)
    assert [sent_shape(tc, IMAGE, p) for p in plan] == ["[1, 3, 224, 8|16]", "[1, 8|16]"]


def test_class_wide_dims_size_only_the_inputs_served_with_a_minus_one():
    tc = TrafficClass(shape=ShapeSpec(dims=(16,)), inputs=(InputSpec("SCALE", send=True),))
    assert shapes(tc, VAR) == [{"VALUES": (1, 16), "SCALE": (1, 1)}]


def test_optional_inputs_go_out_only_when_asked():
    assert "SCALE" in shapes(TrafficClass(inputs=(InputSpec("SCALE", send=True),)), VAR)[0]
    assert "SCALE" not in shapes(TrafficClass(inputs=(InputSpec("SCALE", send=False),)), VAR)[0]
    assert sent_shape(TrafficClass(), VAR, plan_inputs(TrafficClass(), VAR)[1]) == "not sent"


def test_strings_get_their_configured_lengths():
    (tensors,) = tensor_variants(TrafficClass(shape=ShapeSpec(batch=16), string_len=(3, 3)), TEXT,
                                 np.random.default_rng(0))
    (name, datatype, arr), = tensors
    assert (name, datatype, arr.shape, arr.dtype) == ("TEXT", "BYTES", (16, 1), object)
    assert {len(s) for s in arr.reshape(-1)} == {3} and len(set(arr.reshape(-1))) > 1


@pytest.mark.parametrize("tc, info, message", [
    (TrafficClass(inputs=(InputSpec("VALUE", dims=(4,)),)), VAR,
     "model var_dims has no input VALUE; its inputs are VALUES, SCALE"),
    (TrafficClass(inputs=(InputSpec("IMAGE", dims=(4, 224, 224)),)), IMAGE,
     r"inputs.IMAGE.dims \[4, 224, 224\] does not fit input IMAGE, served as \[3, -1, -1\]: "
     "give 3 dims with dim 0 = 3"),
    (TrafficClass(inputs=(InputSpec("A", dims=(4, 1)),)), TWO, r"served as \[4\]: give 1 dim"),
    (TrafficClass(shape=ShapeSpec(dims=(2, 2))), VAR, r"shape.dims \[2, 2\] does not fit input VALUES"),
    (TrafficClass(inputs=(InputSpec("VALUES", send=False),)), VAR, "input VALUES of var_dims is required"),
    (TrafficClass(shape=ShapeSpec("uniform")), TWO, "a uniform length fills -1 dims, but no input of two_inputs"),
    (TrafficClass(shape=ShapeSpec(batch=9)), VAR, "shape batch 9 is over model var_dims's max_batch_size 8"),
    (TrafficClass(shape=ShapeSpec(batch=2)), TWO, "does not batch"),
])
def test_wrong_shapes_name_the_input_and_the_fix(tc, info, message):
    with pytest.raises(ValueError, match=message):
        tensor_variants(tc, info, np.random.default_rng(0))


def test_a_request_larger_than_the_table_allows_is_refused_before_anything_is_allocated(monkeypatch):
    import loadgen.inputs.tensors as inputs  # noqa: PLC0415

    monkeypatch.setattr(inputs, "random_tensor", lambda *a, **k: pytest.fail("allocated a tensor first"))
    huge = TrafficClass(inputs=(InputSpec("VALUES", dims=(20_000_000,)),))  # 8 rows x 80 MB of FP32
    with pytest.raises(ValueError, match="one request's inputs are .* bytes; .* at most 67,108,864"):
        tensor_variants(huge, VAR, np.random.default_rng(0))
