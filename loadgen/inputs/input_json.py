"""perf_analyzer's --input-data JSON: {"data": [{INPUT: values | {"content": ..., "shape": [...]} | {"b64": ...}}]}.

Each entry of "data" is one request variant. As in perf_analyzer, values are flattened row-major and describe one
row (no batch dimension; a "shape" with one more dim than the model's is taken as the batch dimension); "b64" is the
tensor's little-endian bytes (BYTES: each element as a 4-byte length and its bytes); BYTES content is a list of
strings. "validation_data" (perf_analyzer's check of the outputs) is accepted and not used; a list of lists (data
streams for sequence models) is refused.
"""
from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

import numpy as np

from loadgen.inputs.metadata import ModelInfo, TensorInfo
from loadgen.inputs.payload import deserialize_bytes, numpy_dtype
from loadgen.inputs.shapes import fill

FORMAT = '{"data": [{"INPUT": [1, 2, 3]}, {"INPUT": {"content": [1, 2], "shape": [2]}}, {"INPUT": {"b64": "..."}}]}'


def read_json_entries(path: Path, info: ModelInfo, limit: int) -> list[tuple[str, dict[str, np.ndarray]]]:
    """Return up to limit entries of a perf_analyzer input-data file as (where, {input: array}), checked against the
    model's inputs and datatypes (shapes are checked by the caller)."""
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"input data {path}: not JSON ({exc}); perf_analyzer's format is {FORMAT}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list) or not doc["data"]:
        raise ValueError(f"input data {path}: expected an object with a non-empty 'data' list, as in {FORMAT}")
    extra = sorted(set(doc) - {"data", "validation_data"})
    if extra:
        raise ValueError(f"input data {path}: unknown key(s) {extra}; the file holds 'data' (and perf_analyzer's "
                         "'validation_data')")
    if any(isinstance(e, list) for e in doc["data"]):
        raise ValueError(f"input data {path}: 'data' holds lists: perf_analyzer's data streams for sequence models. "
                         "A traffic class sends independent requests: give one flat list of entries {INPUT: ...} "
                         "(or run the streams as sequences)")
    return [(f"{path} entry {i}", _entry(e, info, f"{path} entry {i}")) for i, e in enumerate(doc["data"][:limit])]


def _entry(entry, info: ModelInfo, where: str) -> dict[str, np.ndarray]:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object {{INPUT: values, ...}}, got {type(entry).__name__}")
    names = info.input_names()
    unknown = sorted(set(entry) - set(names) - {"model"})  # perf_analyzer allows "model" beside the inputs
    if unknown:
        raise ValueError(f"{where}: model {info.name} has no input {', '.join(unknown)}; its inputs are "
                         f"{', '.join(names)}")
    out = {}
    for t in info.inputs:
        if t.name in entry:
            out[t.name] = _tensor(entry[t.name], t, f"{where}, input {t.name}")
        elif not t.optional:
            raise ValueError(f"{where}: required input {t.name} is missing; every entry gives each required input "
                             f"({', '.join(x.name for x in info.inputs if not x.optional)})")
    return out


def _tensor(value, t: TensorInfo, where: str) -> np.ndarray:
    shape = None
    if isinstance(value, dict):
        extra = sorted(set(value) - {"content", "shape", "b64"})
        if extra:
            raise ValueError(f"{where}: unknown key(s) {extra}; a tensor is a list, or {{'content': ..., 'shape': "
                             "[...]}}, or {'b64': ...}")
        if "shape" in value:
            shape = value["shape"]
            if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
                raise ValueError(f"{where}: shape must be a list of whole numbers, got {shape!r}")
        if "b64" not in value and "content" not in value:
            raise ValueError(f"{where}: give the values in 'content' (or 'b64') beside 'shape'")
        value = value if "b64" in value else value["content"]
    if isinstance(value, dict) and "b64" in value:
        flat = _b64(value["b64"], t, where)
    else:
        flat = _values(value if isinstance(value, list) else [value], t, where)
    return _shaped(flat, shape, t, where)


def _values(content: list, t: TensorInfo, where: str) -> np.ndarray:
    if t.datatype == "BYTES":
        items = np.asarray(content, dtype=object).reshape(-1)
        out = np.empty(items.size, dtype=object)
        out[:] = [s.encode() if isinstance(s, str) else str(s).encode() for s in items.tolist()]
        return out
    try:
        arr = np.asarray(content).reshape(-1)
    except ValueError:
        raise ValueError(f"{where}: nested lists of unequal lengths; flatten the values row-major") from None
    dtype = numpy_dtype(t.datatype)
    if arr.size and arr.dtype.kind not in "biuf":
        raise ValueError(f"{where}: {t.datatype} takes numbers, got {arr.reshape(-1)[0]!r}")
    if dtype.kind == "b" and arr.size and not set(np.unique(arr).tolist()) <= {0, 1}:
        raise ValueError(f"{where}: BOOL takes true/false (or 0/1), got {sorted(set(arr.tolist()))[:5]}")
    if dtype.kind in "iu" and arr.size:
        if arr.dtype.kind == "f" and not np.all(np.mod(arr, 1) == 0):
            raise ValueError(f"{where}: {t.datatype} takes whole numbers, got {arr[np.mod(arr, 1) != 0][0]}")
        info = np.iinfo(dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise ValueError(f"{where}: {t.datatype} holds {info.min}..{info.max}, got {arr.min()}..{arr.max()}")
    return arr.astype(dtype)


def _b64(text, t: TensorInfo, where: str) -> np.ndarray:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise ValueError(f"{where}: b64 must be a base64 string of the tensor's bytes") from None
    if t.datatype == "BYTES":
        try:
            return deserialize_bytes(raw)
        except ValueError as exc:
            raise ValueError(f"{where}: b64 of a BYTES tensor holds each element as a 4-byte little-endian "
                             f"length and its bytes: {exc}") from None
    dtype = numpy_dtype(t.datatype)
    if len(raw) % dtype.itemsize:
        raise ValueError(f"{where}: {len(raw)} bytes are not whole {t.datatype} values of {dtype.itemsize} bytes")
    return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype)


def _shaped(flat: np.ndarray, shape: list | None, t: TensorInfo, where: str) -> np.ndarray:
    if shape is None:
        if t.dims.count(-1) > 1:
            raise ValueError(f"{where}: input {t.name} is served as {list(t.dims)}: give the entry's shape, "
                             "{'content': [...], 'shape': [...]}")
        known = int(np.prod([d for d in t.dims if d != -1], dtype=np.int64))
        if -1 in t.dims and known and flat.size % known == 0:
            shape = list(fill(t.dims, flat.size // known))
        else:
            shape = list(t.dims)
    want = int(np.prod(shape, dtype=np.int64))
    if want != flat.size:
        raise ValueError(f"{where}: {flat.size} values do not fill shape {shape} ({want} values); one entry is one "
                         "row, flattened row-major (give 'shape' with a leading batch dim for several rows)")
    return flat.reshape(shape)
