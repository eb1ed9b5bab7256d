"""Real input data, without a server: perf_analyzer's JSON in every form and folders of .npy files, each mistake
named with its file, entry and fix. Driving a real server with them: tests/contract/loadgen/inputs/."""
from __future__ import annotations

import base64
import json
import logging
import struct

import numpy as np
import pytest

from loadgen.inputs.input_data import read_data
from loadgen.inputs.metadata import ModelInfo, TensorInfo
from loadgen.inputs.shapes import MAX_VARIANTS, ShapeSpec
from loadgen.inputs.tensors import tensor_variants
from loadgen.spec import TrafficClass
from tests.unit.loadgen.inputs.models import TEXT, TWO, VAR


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


def test_an_input_data_file_larger_than_the_table_allows_is_not_read(tmp_path, monkeypatch):
    from loadgen.limits import LIMITS, Limit  # noqa: PLC0415

    path = tmp_path / "data.json"
    path.write_text(json.dumps({"data": [{"A": [1, 2, 3, 4], "B": [1, 2]}]}))
    monkeypatch.setitem(LIMITS, "data_file_bytes", Limit("size of an input-data JSON file", 0, 10, whole=True))
    with pytest.raises(ValueError, match="size of an input-data JSON file"):
        read_data(str(path), TWO)


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
