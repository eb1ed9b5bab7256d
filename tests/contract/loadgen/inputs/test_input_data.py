"""Real input data against a real server: perf_analyzer's JSON (every form, strings stacked into rows) and folders of
.npy files drive the third-party models, and the answers are those of the data sent."""
from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import TrafficClass
from tests.contract.loadgen.inputs.served import answers, drive

pytestmark = pytest.mark.xdist_group("third-party-server")  # one worker starts that server (conftest.py)


def test_perf_analyzer_json_drives_a_batching_model(url, tmp_path):
    floats = base64.b64encode(np.array([0.5, 1.5, 2.0, 4.0], "<f4").tobytes()).decode()
    path = tmp_path / "values.json"
    path.write_text(json.dumps({"data": [
        {"VALUES": [1, 2, 3]},  # a flat list fills the -1
        {"VALUES": {"content": [1, 1, 1, 1, 1], "shape": [5]}, "SCALE": [3]},
        {"VALUES": {"b64": floats}},
        {"VALUES": {"content": [[1, 2], [3, 4]], "shape": [2, 2]}, "SCALE": {"content": [[2], [10]], "shape": [2, 1]}},
    ]}))
    tc = TrafficClass(data=str(path))
    drive(url, "var_dims", tc)
    totals = [got["TOTAL"].reshape(-1).tolist() for _, got in answers(url, "var_dims", tc)]
    assert totals == [[6.0], [15.0], [8.0], [6.0, 70.0]], totals


def test_perf_analyzer_json_strings_stack_consecutive_entries_into_rows(url, tmp_path):
    raw = struct.pack("<I", 4) + b"abcd"
    path = tmp_path / "text.json"
    path.write_text(json.dumps({"data": [{"TEXT": ["a"]}, {"TEXT": {"content": ["héllo"], "shape": [1]}},
                                         {"TEXT": {"b64": base64.b64encode(raw).decode()}}],
                                "validation_data": [{"LENGTH": [1]}, {"LENGTH": [6]}, {"LENGTH": [4]}]}))
    tc = TrafficClass(data=str(path), shape=ShapeSpec(batch=2))
    drive(url, "text_len", tc)
    lengths = [got["LENGTH"].reshape(-1).tolist() for _, got in answers(url, "text_len", tc)]
    assert lengths == [[1, 6], [6, 4], [4, 1]], lengths  # rows k and k+1; "é" is 2 bytes of UTF-8


def test_a_folder_of_npy_files_drives_a_model(url, tmp_path):
    for k, (a, b) in enumerate([([1, 2, 3, 4], [1, 1]), ([0.5, 0, 0, 2], [3, 4])]):
        (tmp_path / str(k)).mkdir()
        np.save(tmp_path / str(k) / "A.npy", np.array(a, np.float32))
        np.save(tmp_path / str(k) / "B.npy", np.array(b, np.int32))
    tc = TrafficClass(data=str(tmp_path))
    drive(url, "two_inputs", tc)
    outs = [got["OUT"].tolist() for _, got in answers(url, "two_inputs", tc)]
    assert outs == [[2, 4, 6, 8], [3.5, 0, 0, 14]], outs


def test_npy_arrays_with_their_own_batch_dimension_are_sent_as_they_are(url, tmp_path):
    np.save(tmp_path / "VALUES.npy", np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    np.save(tmp_path / "SCALE.npy", np.array([[1], [-1]], np.float32))
    tc = TrafficClass(data=str(tmp_path), shape=ShapeSpec(batch=4))  # the data's own 2 rows win
    drive(url, "var_dims", tc)
    (sent, got), = answers(url, "var_dims", tc)
    assert got["TOTAL"].reshape(-1).tolist() == [6.0, -15.0]
