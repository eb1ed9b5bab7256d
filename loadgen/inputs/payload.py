"""Triton's binary tensor protocol: JSON header plus raw bytes, encoded once and reused."""
from __future__ import annotations

import json
import string
import struct

import numpy as np

from loadgen.connection import Response

DTYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "BYTES": np.object_,
}
PRINTABLE = np.frombuffer(
    (string.digits + string.ascii_letters + string.punctuation + " ").encode(), np.uint8)  # printable ASCII


def numpy_dtype(datatype: str) -> np.dtype:
    """Return the numpy type of a Triton datatype: BYTES is an object array of bytes, BF16 ml_dtypes' bfloat16."""
    if datatype == "BF16":
        import ml_dtypes  # noqa: PLC0415 - tritonclient's own bfloat16 type; needed only for BF16 models

        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(DTYPES[datatype])
    except KeyError:
        raise ValueError(f"datatype {datatype} is not a Triton datatype the load generator knows "
                         f"({', '.join([*DTYPES, 'BF16'])})") from None


def random_tensor(datatype: str, shape: tuple[int, ...], rng: np.random.Generator,
                  string_len: tuple[int, int] = (1, 16)) -> np.ndarray:
    """Return a tensor of plausible values: floats in [0, 1), small integers, random booleans, printable strings."""
    dtype = numpy_dtype(datatype)
    if datatype == "BYTES":
        return random_strings(shape, rng, *string_len)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.random(shape).astype(dtype)  # FP16/32/64 and BF16


def random_strings(shape: tuple[int, ...], rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    """Return an object array of printable ASCII bytes, each length drawn uniformly in low..high."""
    lengths = rng.integers(low, high + 1, int(np.prod(shape, dtype=np.int64)))
    chars = PRINTABLE[rng.integers(0, len(PRINTABLE), int(lengths.sum()))].tobytes()
    ends = np.cumsum(lengths)
    out = np.empty(len(lengths), dtype=object)
    out[:] = [chars[e - n:e] for n, e in zip(lengths.tolist(), ends.tolist())]
    return out.reshape(shape)


def serialize_bytes(arr: np.ndarray) -> bytes:
    """Return a BYTES tensor in Triton's binary form: each element, row-major, as a 4-byte little-endian length
    and its bytes (str elements are sent as UTF-8)."""
    parts = []
    for item in arr.reshape(-1).tolist():
        data = item.encode() if isinstance(item, str) else bytes(item)
        parts += (struct.pack("<I", len(data)), data)
    return b"".join(parts)


def deserialize_bytes(buf: bytes | memoryview) -> np.ndarray:
    """Return the elements of a binary BYTES tensor as a flat object array of bytes."""
    view, items, offset = memoryview(buf), [], 0
    while offset < len(view):
        if offset + 4 > len(view):
            raise ValueError(f"a BYTES tensor ends inside an element's length at byte {offset} of {len(view)}")
        (size,) = struct.unpack_from("<I", view, offset)
        if offset + 4 + size > len(view):
            raise ValueError(f"a BYTES element of {size} bytes at byte {offset} runs past the tensor's {len(view)}")
        items.append(bytes(view[offset + 4:offset + 4 + size]))
        offset += 4 + size
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def tensor_bytes(datatype: str, arr: np.ndarray) -> bytes:
    """Return a tensor's bytes as the binary tensor extension sends them (little-endian, row-major)."""
    if datatype == "BYTES":
        return serialize_bytes(arr)
    dtype = numpy_dtype(datatype)
    return np.ascontiguousarray(arr, dtype.newbyteorder("<")).tobytes()


def infer_body(inputs: list[tuple[str, str, np.ndarray]], parameters: dict | None = None) -> tuple[bytes, int]:
    """Return (body, JSON header length) of an inference request asking for binary outputs."""
    blobs = [tensor_bytes(dt, arr) for _, dt, arr in inputs]
    header = {
        "inputs": [
            {"name": name, "shape": list(arr.shape), "datatype": dt, "parameters": {"binary_data_size": len(blob)}}
            for (name, dt, arr), blob in zip(inputs, blobs)
        ],
        "parameters": {"binary_data_output": True, **(parameters or {})},
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    return head + b"".join(blobs), len(head)


def http_request(host: str, model: str, body: bytes, header_length: int) -> bytes:
    """Return the complete HTTP/1.1 request for POST /v2/models/MODEL/infer."""
    head = (
        f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: {header_length}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def decode_outputs(response: Response) -> dict[str, np.ndarray]:
    """Return the output tensors of a successful response, binary or JSON (BYTES as object arrays of bytes)."""
    size = response.header_length or len(response.body)
    header = json.loads(response.body[:size])
    outputs, offset = {}, size
    for out in header.get("outputs", []):
        datatype, shape = out["datatype"], out["shape"]
        nbytes = out.get("parameters", {}).get("binary_data_size")
        if nbytes is None:
            outputs[out["name"]] = _json_tensor(datatype, out["data"]).reshape(shape)
            continue
        blob = memoryview(response.body)[offset:offset + nbytes]
        offset += nbytes
        if datatype == "BYTES":
            outputs[out["name"]] = deserialize_bytes(blob).reshape(shape)
        else:
            dtype = numpy_dtype(datatype).newbyteorder("<")
            outputs[out["name"]] = np.frombuffer(blob, dtype, nbytes // dtype.itemsize).reshape(shape)
    return outputs


def _json_tensor(datatype: str, data: list) -> np.ndarray:
    if datatype != "BYTES":
        return np.asarray(data, numpy_dtype(datatype))
    out = np.empty(len(data), dtype=object)
    out[:] = [s.encode() if isinstance(s, str) else bytes(s) for s in data]
    return out


def error_message(response: Response) -> str:
    """Return Triton's error text of a failed response."""
    try:
        return str(json.loads(response.body)["error"])
    except (ValueError, KeyError, TypeError):
        return response.body[:200].decode(errors="replace")
