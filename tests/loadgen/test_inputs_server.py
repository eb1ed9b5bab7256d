"""Any model's inputs against the real server: strings, -1 dims, optional inputs, two unbatched inputs, and real
data from perf_analyzer's JSON and .npy folders; each run ends with 0 failures and the answers are checked."""
from __future__ import annotations

import asyncio
import base64
import json
import struct
from urllib.parse import urlparse

import numpy as np
import pytest

from app.server.embedded import EmbeddedServer, ServerOptions
from loadgen.classes import prepare_class
from loadgen.connection import BlockingConnection
from loadgen.inputs.tensors import tensor_variants
from loadgen.inputs.metadata import fetch_model
from loadgen.outcome import Outcome
from loadgen.inputs.payload import decode_outputs, error_message
from loadgen.run import LoadRun
from loadgen.inputs.shapes import ShapeSpec
from loadgen.spec import InputSpec, LoadSpec, TrafficClass
from tests.third_party import copy_repository

ECHO_CONFIG = """name: "text_echo"
backend: "python"
max_batch_size: 8
input [ { name: "TEXT", data_type: TYPE_STRING, dims: [ -1 ] } ]
output [ { name: "ECHO", data_type: TYPE_STRING, dims: [ -1 ] } ]
"""
ECHO_MODEL = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "ECHO", pb_utils.get_input_tensor_by_name(r, "TEXT").as_numpy())]) for r in requests]
'''


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """A server on the third-party repository (and a string echo model of this test's own) for this module."""
    base = tmp_path_factory.mktemp("third_party")
    repo = copy_repository(base / "repo")
    (repo / "text_echo" / "1").mkdir(parents=True)
    (repo / "text_echo" / "config.pbtxt").write_text(ECHO_CONFIG)
    (repo / "text_echo" / "1" / "model.py").write_text(ECHO_MODEL)
    server = EmbeddedServer(ServerOptions(model_repository=repo, models=("text_len", "var_dims", "two_inputs",
                                                                           "text_echo"),
                                          http_port=None, grpc_port=None, metrics_port=None, log_dir=base))
    endpoint = server.start()
    yield endpoint.http_url
    server.stop()


def drive(url: str, model: str, tc: TrafficClass, requests: int = 60) -> None:
    """Run a short closed loop of the class; every request must succeed."""
    spec = LoadSpec(model=model, concurrency=4, duration_s=None, max_requests=requests, classes=(tc,), seed=3)
    records: list = []
    asyncio.run(LoadRun(spec, url, [records.extend]).run())
    failed = [r for r in records if r.outcome is not Outcome.OK]
    assert len(records) == requests and not failed, (
        f"{len(failed)} of {len(records)} failed: {sorted({(r.error, r.detail) for r in failed})[:3]}")


def answers(url: str, model: str, tc: TrafficClass) -> list[tuple[dict, dict]]:
    """Send each request the class prepares once; return (input arrays sent, outputs answered) per variant."""
    info = fetch_model(url, model)
    address = urlparse(url)
    prepared = prepare_class(tc, model, info, address.netloc, 5)
    sent = tensor_variants(tc, info, np.random.default_rng(5))  # the same seed: the tensors of those requests
    conn = BlockingConnection(address.hostname, address.port)
    out = []
    try:
        for data, tensors in zip(prepared.requests, sent, strict=True):
            response = conn.request(data, 10.0)
            assert response.status == 200, error_message(response)
            out.append(({name: arr for name, _, arr in tensors}, decode_outputs(response)))
    finally:
        conn.close()
    return out


def test_random_strings_of_varied_lengths_reach_a_bytes_input(url):
    tc = TrafficClass(shape=ShapeSpec(batch=16), string_len=(0, 40))
    drive(url, "text_len", tc)
    (sent, got), = answers(url, "text_len", tc)
    lengths = [len(s) for s in sent["TEXT"].reshape(-1)]
    assert got["LENGTH"].reshape(-1).tolist() == lengths, (got["LENGTH"].reshape(-1).tolist(), lengths)
    assert len(set(lengths)) > 4 and max(lengths) > 16, lengths  # the range was used, not one length


def test_strings_come_back_through_a_bytes_output(url):
    tc = TrafficClass(shape=ShapeSpec("choice", choices=(1, 5), batch=3), string_len=(0, 12))
    drive(url, "text_echo", tc, requests=30)
    pairs = answers(url, "text_echo", tc)
    assert [sent["TEXT"].shape for sent, _ in pairs] == [(3, 1), (3, 5)]
    for sent, got in pairs:
        assert got["ECHO"].dtype == object and got["ECHO"].tolist() == sent["TEXT"].tolist()


def test_a_minus_one_dim_nobody_sized_is_sent_as_one_and_the_optional_input_stays_out(url):
    tc = TrafficClass(shape=ShapeSpec(batch=2))
    drive(url, "var_dims", tc)
    (sent, got), = answers(url, "var_dims", tc)
    assert set(sent) == {"VALUES"} and sent["VALUES"].shape == (2, 1)
    np.testing.assert_allclose(got["TOTAL"].reshape(-1), sent["VALUES"].sum(axis=1), rtol=1e-6)


def test_a_given_length_and_an_optional_input_sent_on_request(url):
    tc = TrafficClass(shape=ShapeSpec(batch=3), inputs=(InputSpec("VALUES", dims=(16,)), InputSpec("SCALE", send=True)))
    drive(url, "var_dims", tc)
    (sent, got), = answers(url, "var_dims", tc)
    assert sent["VALUES"].shape == (3, 16) and sent["SCALE"].shape == (3, 1)
    expected = sent["VALUES"].sum(axis=1) * sent["SCALE"].reshape(-1)
    np.testing.assert_allclose(got["TOTAL"].reshape(-1), expected, rtol=1e-5)


def test_variable_lengths_fill_the_minus_one_dim(url):
    tc = TrafficClass(shape=ShapeSpec("uniform", low=2, high=9))
    drive(url, "var_dims", tc)
    pairs = answers(url, "var_dims", tc)
    assert [sent["VALUES"].shape[1] for sent, _ in pairs] == list(range(2, 10))
    for sent, got in pairs:
        np.testing.assert_allclose(got["TOTAL"].reshape(-1), sent["VALUES"].sum(axis=1), rtol=1e-6)


def test_two_inputs_of_two_types_without_batching(url):
    tc = TrafficClass()
    drive(url, "two_inputs", tc)
    (sent, got), = answers(url, "two_inputs", tc)
    assert sent["A"].shape == (4,) and sent["B"].shape == (2,) and sent["B"].dtype == np.int32
    np.testing.assert_allclose(got["OUT"], sent["A"] * sent["B"].sum(), rtol=1e-6)


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


def test_optional_inputs_are_read_from_the_served_config(url):
    info = fetch_model(url, "var_dims")
    assert [(t.name, t.datatype, t.dims, t.optional) for t in info.inputs] == [
        ("VALUES", "FP32", (-1,), False), ("SCALE", "FP32", (1,), True)]
