"""Real request data for a traffic class: perf_analyzer's JSON (loadgen.inputs.input_json) or a folder of .npy files.

A folder holds `INPUT.npy` per input (one variant) or subfolders `0/`, `1/`, ... of them (one variant each, in
numeric order). Every array is checked against the served model: names, datatypes (a lossless cast is made), dims.
Batch dimension: an array with one dim more than the model's input (a batching model) carries its own rows and is
sent as it is. An array without it is one row: a request of the class's `shape.batch` rows stacks the rows of
consecutive variants k, k+1, ... (wrapping), as perf_analyzer does with -b; those rows must have equal shapes.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loadgen.inputs.input_json import read_json_entries
from loadgen.limits import LIMITS
from loadgen.inputs.metadata import ModelInfo, TensorInfo
from loadgen.inputs.payload import numpy_dtype
from loadgen.inputs.shapes import MAX_VARIANTS

log = logging.getLogger(__name__)
Tensors = list[tuple[str, str, np.ndarray]]  # one request: (input name, Triton datatype, array)


@dataclass(frozen=True)
class DataEntry:
    """One request variant read from a data source: where it came from and its arrays by input name."""

    where: str
    arrays: dict[str, np.ndarray]


def read_data(path: str, info: ModelInfo) -> list[DataEntry]:
    """Read a JSON file or .npy folder (at most MAX_VARIANTS variants); ValueError names the file, input and fix."""
    p = Path(path).expanduser()
    if p.is_dir():
        raw = _read_npy_dir(p, info)
    elif p.suffix == ".npy":
        raise ValueError(f"input data {path}: give the folder that holds INPUT.npy files (one per input, named "
                         "after it), not one file")
    elif p.is_file():
        LIMITS["data_file_bytes"].check(p.stat().st_size, f"input data {path}")
        raw = read_json_entries(p, info, MAX_VARIANTS + 1)
    else:
        raise ValueError(f"input data {path}: no such file or folder (a relative path starts at {os.getcwd()})")
    if len(raw) > MAX_VARIANTS:
        log.warning("input data %s: only the first %d variants are sent", path, MAX_VARIANTS)
    entries = []
    for where, arrays in raw[:MAX_VARIANTS]:
        entries.append(DataEntry(where, {n: conform(a, _tensor(info, n), info, f"{where}, input {n}")
                                         for n, a in arrays.items()}))
    return entries


def conform(arr: np.ndarray, t: TensorInfo, info: ModelInfo, where: str) -> np.ndarray:
    """Return arr when it fits the input's dims, per row or with a leading batch dimension; else ValueError."""
    rank, mbs = len(t.dims), info.max_batch_size
    if arr.ndim == rank:
        row = arr.shape
    elif arr.ndim == rank + 1 and mbs > 0:
        if not 1 <= arr.shape[0] <= mbs:
            raise ValueError(f"{where}: shape {list(arr.shape)} has {arr.shape[0]} rows in its batch dimension; "
                             f"model {info.name} takes 1 to {mbs} (its max_batch_size)")
        row = arr.shape[1:]
    else:
        batched = f", or {rank + 1} with a leading batch dimension of up to {mbs} rows" if mbs > 0 else \
            " (the model does not batch: no batch dimension)"
        raise ValueError(f"{where}: shape {list(arr.shape)} has {arr.ndim} dims; input {t.name} takes {rank} "
                         f"({list(t.dims)}){batched}")
    wrong = [f"dim {i} must be {d}" for i, (d, s) in enumerate(zip(t.dims, row)) if d not in (-1, s)]
    if wrong:
        raise ValueError(f"{where}: shape {list(arr.shape)} does not fit input {t.name}, served as {list(t.dims)} "
                         f"per row: {', '.join(wrong)}")
    return arr


def data_variants(entries: list[DataEntry], info: ModelInfo, batch: int, source: str) -> list[Tensors]:
    """Return one request's tensors per entry: arrays with a batch dimension as they are, rows stacked from
    `batch` consecutive entries (a batching model) otherwise."""
    n, out = len(entries), []
    for k, entry in enumerate(entries):
        tensors = []
        for t in info.inputs:
            if t.name not in entry.arrays:
                continue
            arr = entry.arrays[t.name]
            if info.max_batch_size > 0 and arr.ndim == len(t.dims):
                arr = np.stack([_row(entries[(k + i) % n], t, arr, entry.where) for i in range(batch)])
            tensors.append((t.name, t.datatype, arr))
        rows = {a.shape[0] for _, _, a in tensors} if info.max_batch_size > 0 else set()
        if len(rows) > 1:
            raise ValueError(f"{entry.where}: the inputs of one request carry different rows "
                             f"({', '.join(f'{n_}: {a.shape[0]}' for n_, _, a in tensors)}); give every input the "
                             f"same batch dimension (input data {source})")
        out.append(tensors)
    return out


def _row(entry: DataEntry, t: TensorInfo, first: np.ndarray, start: str) -> np.ndarray:
    arr = entry.arrays.get(t.name)
    if arr is None or arr.shape != first.shape:
        got = "no value" if arr is None else f"shape {list(arr.shape)}"
        raise ValueError(f"{start}: a request's rows come from consecutive variants, and {entry.where} gives input "
                         f"{t.name} {got} where the first row has shape {list(first.shape)}; give every variant "
                         "the same shape, a batch dimension of its own, or use batch 1")
    return arr


def _tensor(info: ModelInfo, name: str) -> TensorInfo:
    return next(t for t in info.inputs if t.name == name)


def _read_npy_dir(root: Path, info: ModelInfo) -> list[tuple[str, dict[str, np.ndarray]]]:
    subdirs = sorted((d for d in root.iterdir() if d.is_dir() and any(d.glob("*.npy"))), key=_numeric_first)
    files = sorted(root.glob("*.npy"))
    if files and subdirs:
        raise ValueError(f"input data {root}: holds both .npy files and folders of them; put INPUT.npy files "
                         "either in the folder (one variant) or in its subfolders 0/, 1/, ... (one variant each)")
    if not files and not subdirs:
        raise ValueError(f"input data {root}: no .npy files; save one per input named after it: {root}/INPUT.npy "
                         f"(one variant) or {root}/0/INPUT.npy, {root}/1/INPUT.npy, ...")
    folders = [root] if files else subdirs[:MAX_VARIANTS + 1]
    return [(str(f), _read_folder(f, info)) for f in folders]


def _numeric_first(path: Path) -> tuple:
    return (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name)


def _read_folder(folder: Path, info: ModelInfo) -> dict[str, np.ndarray]:
    names, arrays = info.input_names(), {}
    for f in sorted(folder.glob("*.npy")):
        if f.stem not in names:
            raise ValueError(f"{f}: model {info.name} has no input {f.stem}; name each file after an input: "
                             f"{', '.join(names)}")
        try:
            arr = np.load(f, allow_pickle=False)
        except ValueError:
            raise ValueError(f"{f}: an object array (it needs pickle, which is not loaded); save strings as "
                             "np.array([...], dtype=str) or dtype=bytes") from None
        except OSError as exc:
            raise ValueError(f"{f}: not a .npy file numpy can read ({exc})") from None
        arrays[f.stem] = _typed(arr, _tensor(info, f.stem), str(f))
    missing = [t.name for t in info.inputs if not t.optional and t.name not in arrays]
    if missing:
        raise ValueError(f"input data {folder}: no {', '.join(m + '.npy' for m in missing)} for the required "
                         f"input(s) of {info.name}; save one .npy per required input")
    return arrays


def _typed(arr: np.ndarray, t: TensorInfo, where: str) -> np.ndarray:
    if t.datatype == "BYTES":
        if arr.dtype.kind not in "SU":
            raise ValueError(f"{where}: input {t.name} is BYTES (strings); save an array of dtype str or bytes, "
                             f"not {arr.dtype}")
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [s.encode() if isinstance(s, str) else bytes(s) for s in arr.reshape(-1).tolist()]
        return out
    target = numpy_dtype(t.datatype)
    if arr.dtype == target:
        return arr
    if np.can_cast(arr.dtype, target, "safe") or (t.datatype == "BF16" and arr.dtype.kind == "f"):
        return arr.astype(target)
    raise ValueError(f"{where}: input {t.name} is {t.datatype}; the array is {arr.dtype}, which does not convert "
                     f"without loss: save it with .astype(np.{target.name})")
