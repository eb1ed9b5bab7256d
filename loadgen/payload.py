"""Triton's binary tensor protocol: JSON header plus raw bytes, encoded once and reused."""
from __future__ import annotations

import json

import numpy as np

from loadgen.connection import Response

DTYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}


def numpy_dtype(datatype: str) -> np.dtype:
    """Return the numpy type of a Triton datatype (BYTES is not supported)."""
    try:
        return np.dtype(DTYPES[datatype])
    except KeyError:
        raise ValueError(f"datatype {datatype} is not supported by the load generator") from None


def random_tensor(datatype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Return a tensor of plausible values: floats in [0, 1), small integers, random booleans."""
    dtype = numpy_dtype(datatype)
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 10, shape).astype(dtype)


def infer_body(inputs: list[tuple[str, str, np.ndarray]], parameters: dict | None = None) -> tuple[bytes, int]:
    """Return (body, JSON header length) of an inference request asking for binary outputs."""
    header = {
        "inputs": [
            {"name": name, "shape": list(arr.shape), "datatype": dt, "parameters": {"binary_data_size": arr.nbytes}}
            for name, dt, arr in inputs
        ],
        "parameters": {"binary_data_output": True, **(parameters or {})},
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    return head + b"".join(np.ascontiguousarray(arr).tobytes() for _, _, arr in inputs), len(head)


def http_request(host: str, model: str, body: bytes, header_length: int) -> bytes:
    """Return the complete HTTP/1.1 request for POST /v2/models/MODEL/infer."""
    head = (
        f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: {header_length}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def decode_outputs(response: Response) -> dict[str, np.ndarray]:
    """Return the output tensors of a successful response, binary or JSON."""
    size = response.header_length or len(response.body)
    header = json.loads(response.body[:size])
    outputs, offset = {}, size
    for out in header.get("outputs", []):
        dtype, shape = numpy_dtype(out["datatype"]), out["shape"]
        nbytes = out.get("parameters", {}).get("binary_data_size")
        if nbytes is None:
            outputs[out["name"]] = np.asarray(out["data"], dtype).reshape(shape)
            continue
        outputs[out["name"]] = np.frombuffer(response.body, dtype, nbytes // dtype.itemsize, offset).reshape(shape)
        offset += nbytes
    return outputs


def error_message(response: Response) -> str:
    """Return Triton's error text of a failed response."""
    try:
        return str(json.loads(response.body)["error"])
    except (ValueError, KeyError, TypeError):
        return response.body[:200].decode(errors="replace")
