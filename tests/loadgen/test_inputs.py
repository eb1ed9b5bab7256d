"""What each request carries, without a server: per-input shapes, optional inputs, and data files with their errors."""
from __future__ import annotations

import base64
import json
import logging
import struct

import numpy as np
import pytest

from loadgen.inputs.input_data import read_data
from loadgen.inputs.tensors import plan_inputs, sent_shape, tensor_variants
from loadgen.inputs.metadata import ModelInfo, TensorInfo, info_from_config
from loadgen.inputs.shapes import MAX_VARIANTS, ShapeSpec
from loadgen.spec import InputSpec, TrafficClass

VAR = ModelInfo("var_dims", (TensorInfo("VALUES", "FP32", (-1,)), TensorInfo("SCALE", "FP32", (1,), optional=True)),
                (TensorInfo("TOTAL", "FP32", (1,)),), 8)
IMAGE = ModelInfo("vision", (TensorInfo("IMAGE", "UINT8", (3, -1, -1)), TensorInfo("MASK", "BOOL", (-1,))), (), 4)
TWO = ModelInfo("two_inputs", (TensorInfo("A", "FP32", (4,)), TensorInfo("B", "INT32", (2,))), (), 0)
TEXT = ModelInfo("text_len", (TensorInfo("TEXT", "BYTES", (1,)),), (), 16)


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


def test_a_served_config_gives_the_same_model_info():
    config = {"name": "var_dims", "max_batch_size": 8,
              "input": [{"name": "VALUES", "data_type": "TYPE_FP32", "dims": ["-1"]},
                        {"name": "SCALE", "data_type": "TYPE_FP32", "dims": [1], "optional": True}],
              "output": [{"name": "TOTAL", "data_type": "TYPE_FP32", "dims": [1]}]}
    assert info_from_config(config) == VAR
    text = info_from_config({"input": [{"name": "T", "data_type": "TYPE_STRING", "dims": [1]}]}, "m")
    assert text.inputs == (TensorInfo("T", "BYTES", (1,)),) and text.max_batch_size == 0


# --- perf_analyzer's JSON -----------------------------------------------------------------------------------------


def write(tmp_path, doc) -> str:
    path = tmp_path / "data.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_perf_analyzer_entries_in_every_form(tmp_path):
    raw = base64.b64encode(np.array([1, -2], "<i4").tobytes()).decode()
    path = write(tmp_path, {"data": [
        {"A": [1, 2, 3, 4], "B": [5, 6]},
        {"A": {"content": [[1, 2], [3, 4]], "shape": [4]}, "B": {"b64": raw}},
        {"A": {"content": {"b64": base64.b64encode(np.arange(4, dtype="<f4").tobytes()).decode()}, "shape": [4]},
         "B": [0, 1], "model": "two_inputs"},
    ]})
    variants = tensor_variants(TrafficClass(data=path), TWO, np.random.default_rng(0))
    assert [[(n, d, a.dtype.name, a.tolist()) for n, d, a in v] for v in variants] == [
        [("A", "FP32", "float32", [1, 2, 3, 4]), ("B", "INT32", "int32", [5, 6])],
        [("A", "FP32", "float32", [1, 2, 3, 4]), ("B", "INT32", "int32", [1, -2])],
        [("A", "FP32", "float32", [0, 1, 2, 3]), ("B", "INT32", "int32", [0, 1])],
    ]


def test_strings_in_content_and_in_b64(tmp_path):
    raw = base64.b64encode(struct.pack("<I", 2) + b"hi" + struct.pack("<I", 0)).decode()
    model = ModelInfo("t", (TensorInfo("T", "BYTES", (-1,)),), (), 0)
    path = write(tmp_path, {"data": [{"T": ["héllo", "", 7]}, {"T": {"b64": raw}}]})
    first, second = tensor_variants(TrafficClass(data=path), model, np.random.default_rng(0))
    assert first[0][2].tolist() == ["héllo".encode(), b"", b"7"] and second[0][2].tolist() == [b"hi", b""]


def test_rows_of_a_batch_come_from_consecutive_entries(tmp_path):
    path = write(tmp_path, {"data": [{"VALUES": [1, 1]}, {"VALUES": [2, 2]}, {"VALUES": [3, 3]}]})
    variants = tensor_variants(TrafficClass(data=path, shape=ShapeSpec(batch=2)), VAR, np.random.default_rng(0))
    assert [v[0][2].tolist() for v in variants] == [[[1, 1], [2, 2]], [[2, 2], [3, 3]], [[3, 3], [1, 1]]]


@pytest.mark.parametrize("doc, message", [
    ("{nope", "not JSON"),
    ({"inputs": []}, "expected an object with a non-empty 'data' list"),
    ({"data": [], "x": 1}, "non-empty 'data' list"),
    ({"data": [{"A": [1, 2, 3, 4], "B": [1, 2]}], "extra": 1}, r"unknown key\(s\) \['extra'\]"),
    ({"data": [[{"A": [1]}], [{"A": [2]}]]}, "data streams for sequence models"),
    ({"data": [{"A": [1, 2, 3, 4], "B": [1, 2], "C": [1]}]},
     "entry 0: model two_inputs has no input C; its inputs are A, B"),
    ({"data": [{"A": [1, 2, 3, 4]}]}, "entry 0: required input B is missing"),
    ({"data": [{"A": [1, 2, 3], "B": [1, 2]}]}, "entry 0, input A: 3 values do not fill shape \\[4\\]"),
    ({"data": [{"A": [1, 2, 3, 4], "B": [1.5, 2]}]}, "input B: INT32 takes whole numbers, got 1.5"),
    ({"data": [{"A": [1, 2, 3, 4], "B": [1, 2 ** 40]}]}, "INT32 holds -2147483648..2147483647"),
    ({"data": [{"A": ["a", "b", "c", "d"], "B": [1, 2]}]}, "FP32 takes numbers, got 'a'"),
    ({"data": [{"A": {"shape": [4]}, "B": [1, 2]}]}, "give the values in 'content'"),
    ({"data": [{"A": {"b64": "***"}, "B": [1, 2]}]}, "b64 must be a base64 string"),
    ({"data": [{"A": {"b64": "AAA="}, "B": [1, 2]}]}, "2 bytes are not whole FP32 values"),
    ({"data": [{"A": {"content": [1, 2, 3, 4], "shape": [2, 2]}, "B": [1, 2]}]},
     r"input A: shape \[2, 2\] has 2 dims; input A takes 1 \(\[4\]\) \(the model does not batch"),
])
def test_json_mistakes_name_the_file_the_entry_and_the_fix(tmp_path, doc, message):
    path = write(tmp_path, doc)
    with pytest.raises(ValueError, match=message) as err:
        read_data(path, TWO)
    assert str(tmp_path) in str(err.value)


def test_a_batch_dimension_in_the_data_must_fit_the_model(tmp_path):
    path = write(tmp_path, {"data": [{"VALUES": {"content": list(range(20)), "shape": [10, 2]}}]})
    with pytest.raises(ValueError, match="has 10 rows in its batch dimension; model var_dims takes 1 to 8"):
        read_data(path, VAR)


def test_rows_of_different_shapes_cannot_share_a_request(tmp_path):
    path = write(tmp_path, {"data": [{"VALUES": [1, 2]}, {"VALUES": [1, 2, 3]}]})
    with pytest.raises(ValueError, match=r"entry 1 gives input VALUES shape \[3\] where the first row has shape \[2\]"):
        tensor_variants(TrafficClass(data=path, shape=ShapeSpec(batch=2)), VAR, np.random.default_rng(0))
    assert len(tensor_variants(TrafficClass(data=path), VAR, np.random.default_rng(0))) == 2  # batch 1: fine


def test_variants_stop_at_the_cap(tmp_path, caplog):
    path = write(tmp_path, {"data": [{"VALUES": [i]} for i in range(MAX_VARIANTS + 10)]})
    with caplog.at_level(logging.WARNING):
        variants = tensor_variants(TrafficClass(data=path), VAR, np.random.default_rng(0))
    assert len(variants) == MAX_VARIANTS and "only the first 256 variants" in caplog.text


# --- .npy folders ---------------------------------------------------------------------------------------------------


def test_one_folder_is_one_variant_and_numbered_subfolders_are_many(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    np.save(one / "A.npy", np.arange(4, dtype=np.float32))
    np.save(one / "B.npy", np.array([1, 2], np.int16))  # a lossless cast is made
    variants = tensor_variants(TrafficClass(data=str(one)), TWO, np.random.default_rng(0))
    assert [(n, a.dtype.name) for n, _, a in variants[0]] == [("A", "float32"), ("B", "int32")]
    many = tmp_path / "many"
    for k in (0, 1, 2, 10):
        (many / str(k)).mkdir(parents=True)
        np.save(many / str(k) / "TEXT.npy", np.array([f"v{k}"]))
    texts = [v[0][2].tolist() for v in tensor_variants(TrafficClass(data=str(many)), TEXT, np.random.default_rng(0))]
    assert texts == [[[b"v0"]], [[b"v1"]], [[b"v2"]], [[b"v10"]]]  # numeric order; one row each (batch 1)


@pytest.mark.parametrize("files, message", [
    ({"A.npy": np.zeros(4, np.float64), "B.npy": np.zeros(2, np.int32)},
     r"A.npy: input A is FP32; the array is float64, which does not convert without loss: save it with "
     r"\.astype\(np\.float32\)"),
    ({"A.npy": np.zeros(4, np.float32)}, r"no B.npy for the required input\(s\) of two_inputs"),
    ({"A.npy": np.zeros(4, np.float32), "B.npy": np.zeros(2, np.int32), "C.npy": np.zeros(1)},
     "C.npy: model two_inputs has no input C; name each file after an input: A, B"),
    ({"A.npy": np.zeros((1, 4), np.float32), "B.npy": np.zeros(2, np.int32)}, r"shape \[1, 4\] has 2 dims"),
    ({"A.npy": np.zeros(5, np.float32), "B.npy": np.zeros(2, np.int32)}, r"does not fit input A.*dim 0 must be 4"),
    ({"A.npy": np.array(["a"] * 4), "B.npy": np.zeros(2, np.int32)}, "the array is <U1"),
    ({}, "no .npy files; save one per input named after it"),
])
def test_npy_mistakes_name_the_file_and_the_fix(tmp_path, files, message):
    for name, arr in files.items():
        np.save(tmp_path / name, arr)
    with pytest.raises(ValueError, match=message):
        read_data(str(tmp_path), TWO)


def test_object_arrays_are_not_unpickled(tmp_path):
    np.save(tmp_path / "TEXT.npy", np.array([b"a"], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"TEXT.npy: an object array \(it needs pickle, which is not loaded\); save"):
        read_data(str(tmp_path), TEXT)


def test_a_path_that_is_not_there_or_one_npy_file(tmp_path):
    with pytest.raises(ValueError, match="no such file or folder"):
        read_data(str(tmp_path / "missing.json"), TWO)
    np.save(tmp_path / "A.npy", np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="give the folder that holds INPUT.npy files"):
        read_data(str(tmp_path / "A.npy"), TWO)
    (tmp_path / "0").mkdir()
    np.save(tmp_path / "0" / "A.npy", np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="holds both .npy files and folders of them"):
        read_data(str(tmp_path), TWO)


def test_a_request_larger_than_the_table_allows_is_refused_before_anything_is_allocated(monkeypatch):
    import loadgen.inputs.tensors as inputs  # noqa: PLC0415

    monkeypatch.setattr(inputs, "random_tensor", lambda *a, **k: pytest.fail("allocated a tensor first"))
    huge = TrafficClass(inputs=(InputSpec("VALUES", dims=(20_000_000,)),))  # 8 rows x 80 MB of FP32
    with pytest.raises(ValueError, match="one request's inputs are .* bytes; .* at most 67,108,864"):
        tensor_variants(huge, VAR, np.random.default_rng(0))


def test_an_input_data_file_larger_than_the_table_allows_is_not_read(tmp_path, monkeypatch):
    from loadgen.limits import LIMITS, Limit  # noqa: PLC0415

    path = tmp_path / "data.json"
    path.write_text(json.dumps({"data": [{"A": [1, 2, 3, 4], "B": [1, 2]}]}))
    monkeypatch.setitem(LIMITS, "data_file_bytes", Limit("size of an input-data JSON file", 0, 10, whole=True))
    with pytest.raises(ValueError, match="size of an input-data JSON file"):
        read_data(str(path), TWO)
