"""Triton's binary tensor protocol for every datatype: BYTES elements as 4-byte lengths and bytes, BF16, BOOL."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from loadgen.connection import Response
from loadgen.inputs.payload import (
    decode_outputs,
    deserialize_bytes,
    http_request,
    infer_body,
    numpy_dtype,
    random_strings,
    random_tensor,
    serialize_bytes,
    tensor_bytes,
)

NUMERIC = ("BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64",
           "BF16")


def answer(outputs: list[tuple[str, str, np.ndarray]]) -> Response:
    """Return a binary response holding outputs, framed as Triton frames one (header, then each tensor's bytes)."""
    blobs = [tensor_bytes(dt, arr) for _, dt, arr in outputs]
    header = json.dumps({"outputs": [
        {"name": n, "datatype": dt, "shape": list(a.shape), "parameters": {"binary_data_size": len(b)}}
        for (n, dt, a), b in zip(outputs, blobs)]}).encode()
    return Response(200, header + b"".join(blobs), len(header))


def test_bytes_elements_are_each_a_little_endian_length_then_the_bytes():
    arr = np.array([[b"ab", b""], [b"xyz", "é"]], dtype=object)
    assert serialize_bytes(arr) == b"\x02\x00\x00\x00ab" + b"\x00\x00\x00\x00" + b"\x03\x00\x00\x00xyz" + \
        b"\x02\x00\x00\x00\xc3\xa9"  # row-major; a str goes out as UTF-8
    body, head = infer_body([("TEXT", "BYTES", arr)])
    header = json.loads(body[:head])["inputs"][0]
    assert header["shape"] == [2, 2] and header["datatype"] == "BYTES"
    assert header["parameters"]["binary_data_size"] == 4 * 4 + 2 + 0 + 3 + 2 == len(body) - head


def test_bytes_round_trip_through_decode_outputs():
    text = np.array([b"", b"a\x00b", bytes(range(256)), b"z" * 70_000], dtype=object).reshape(2, 2)
    scores = np.array([[1.5, -2.0]], np.float32)
    out = decode_outputs(answer([("TEXT", "BYTES", text), ("SCORE", "FP32", scores)]))
    assert out["TEXT"].dtype == object and out["TEXT"].tolist() == text.tolist()
    np.testing.assert_array_equal(out["SCORE"], scores)  # the tensor after a BYTES one starts at the right byte


def test_bytes_outputs_in_json_are_bytes_too():
    body = b'{"outputs":[{"name":"T","datatype":"BYTES","shape":[1,2],"data":["hi","\\u00e9"]}]}'
    assert decode_outputs(Response(200, body))["T"].tolist() == [[b"hi", "é".encode()]]


def test_a_truncated_bytes_tensor_is_refused():
    with pytest.raises(ValueError, match="runs past"):
        deserialize_bytes(struct.pack("<I", 9) + b"abc")
    with pytest.raises(ValueError, match="inside an element's length"):
        deserialize_bytes(b"\x01\x00")


@pytest.mark.parametrize("datatype", NUMERIC)
def test_every_numeric_datatype_round_trips(datatype):
    arr = random_tensor(datatype, (3, 4), np.random.default_rng(1))
    assert arr.dtype == numpy_dtype(datatype) and arr.shape == (3, 4)
    body, head = infer_body([("X", datatype, arr)])
    size = json.loads(body[:head])["inputs"][0]["parameters"]["binary_data_size"]
    assert size == 12 * {"BOOL": 1, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "FP16": 2, "BF16": 2}.get(
        datatype, 4 if datatype.endswith("32") else 8)
    got = decode_outputs(answer([("X", datatype, arr)]))["X"]
    assert got.dtype == arr.dtype and got.tolist() == arr.tolist()


def test_a_wider_array_is_sent_as_the_datatype_says():
    arr = np.array([1.5, 2.5])  # float64 given for an FP32 input
    assert tensor_bytes("FP32", arr) == np.array([1.5, 2.5], "<f4").tobytes()


def test_random_strings_are_printable_ascii_within_the_lengths_asked():
    arr = random_strings((50, 4), np.random.default_rng(2), 0, 9)
    lengths = [len(s) for s in arr.reshape(-1)]
    assert arr.dtype == object and all(isinstance(s, bytes) for s in arr.reshape(-1))
    assert min(lengths) == 0 and max(lengths) == 9 and len(set(lengths)) == 10, sorted(set(lengths))
    assert all(32 <= c < 127 for s in arr.reshape(-1) for c in s)
    assert {len(s) for s in random_tensor("BYTES", (30,), np.random.default_rng(3), (5, 5))} == {5}


def test_an_unknown_datatype_is_named():
    with pytest.raises(ValueError, match="datatype FP8 is not a Triton datatype"):
        numpy_dtype("FP8")


@pytest.mark.parametrize("datatype", (*NUMERIC, "BYTES"))
def test_the_bytes_sent_are_those_tritonclient_sends_for_the_same_array(datatype):
    """The gRPC path builds tritonclient InferInputs from the same arrays: both encodings must agree."""
    import tritonclient.grpc as grpc  # noqa: PLC0415 - the reference encoder

    arr = random_tensor(datatype, (2, 3), np.random.default_rng(4), (0, 20))
    reference = grpc.InferInput("X", list(arr.shape), datatype)
    reference.set_data_from_numpy(arr)
    assert tensor_bytes(datatype, arr) == reference._raw_content


def test_binary_protocol_round_trip():
    tensor = np.arange(6, dtype=np.float32).reshape(1, 6)
    body, head = infer_body([("INPUT", "FP32", tensor)], {"priority": 2})
    assert body[head:] == tensor.tobytes() and b'"priority":2' in body[:head]
    request = http_request("h:1", "m", body, head)
    assert request.startswith(b"POST /v2/models/m/infer HTTP/1.1\r\n")
    assert f"Inference-Header-Content-Length: {head}\r\n".encode() in request
    header = b'{"outputs":[{"name":"OUTPUT","datatype":"FP32","shape":[1,6],"parameters":{"binary_data_size":24}}]}'
    out = decode_outputs(Response(200, header + tensor.tobytes(), len(header)))
    assert np.array_equal(out["OUTPUT"], tensor)
    json_only = b'{"outputs":[{"name":"O","datatype":"INT32","shape":[1,1],"data":[7]}]}'
    assert decode_outputs(Response(200, json_only))["O"].tolist() == [[7]]
