"""The tensors a traffic class sends: one list of (name, datatype, array) per request variant.

Each input of the model is sent with, in order of precedence: the class's own dims for it (`inputs`), the class's
`shape.dims` (inputs served with a -1 only), or its served dims. A -1 left takes the class's variable length
(`shape` uniform/choice: one length per variant, the same for every input) or, without one, 1. Optional inputs are
sent only when the class says `send: true`. A class with `data` sends its data instead (loadgen.inputs.input_data).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadgen.inputs.input_data import Tensors, data_variants, read_data
from loadgen.limits import check_request_bytes
from loadgen.inputs.metadata import ModelInfo, TensorInfo
from loadgen.inputs.payload import random_tensor
from loadgen.inputs.shapes import fill
from loadgen.spec_limits import arrays_bytes, request_bytes
from loadgen.spec import TrafficClass


@dataclass(frozen=True)
class PlannedInput:
    """What a class sends for one model input: whether it goes out, and its dims (-1: the class's variable length)."""

    tensor: TensorInfo
    send: bool
    dims: tuple[int, ...]


def tensor_variants(tc: TrafficClass, info: ModelInfo, rng: np.random.Generator) -> list[Tensors]:
    """Return the input tensors of each request variant a class sends (batch dimension included when the model
    batches); the HTTP and gRPC request paths both encode these. BYTES arrays are object arrays of bytes."""
    where = f"class {tc.name}, model {info.name}"
    if tc.data:
        check_batch(tc, info)
        variants = data_variants(read_data(tc.data, info), info, tc.shape.batch, tc.data)
        for variant in variants:
            check_request_bytes(arrays_bytes([arr for _, _, arr in variant]), where)
        return variants
    plan = [p for p in plan_inputs(tc, info) if p.send]
    check_request_bytes(request_bytes(tc, plan, info.max_batch_size > 0), where)  # before allocating anything
    lead = (tc.shape.batch,) if info.max_batch_size > 0 else ()
    lengths = tc.shape.lengths() or [1]
    return [[(p.tensor.name, p.tensor.datatype, random_tensor(p.tensor.datatype, lead + fill(p.dims, n), rng,
                                                              tc.string_len))
             for p in plan] for n in lengths]


def plan_inputs(tc: TrafficClass, info: ModelInfo) -> list[PlannedInput]:
    """Return what a class sends for each of the model's inputs; ValueError names a wrong input and the fix."""
    check_batch(tc, info)
    known = info.input_names()
    unknown = [i.name for i in tc.inputs if i.name not in known]
    if unknown:
        raise ValueError(f"class {tc.name}: model {info.name} has no input {', '.join(unknown)}; "
                         f"its inputs are {', '.join(known) or 'none'}")
    plan = [_plan_one(tc, t, info.name) for t in info.inputs]
    if tc.shape.kind != "fixed" and not any(p.send and -1 in p.dims for p in plan):
        raise ValueError(f"class {tc.name}: a {tc.shape.kind} length fills -1 dims, but no input of {info.name} "
                         f"sent has one left ({_listing(plan)}); give an input dims with a -1 or drop the length")
    return plan


def check_batch(tc: TrafficClass, info: ModelInfo) -> None:
    """Raise ValueError when the class's rows per request do not fit the model's batching."""
    batch = tc.shape.batch
    if info.max_batch_size == 0 and batch > 1:
        raise ValueError(f"class {tc.name}: model {info.name} does not batch (max_batch_size 0), so a request has "
                         f"no rows; set shape batch to 1 (got {batch})")
    if batch > info.max_batch_size > 0:
        raise ValueError(f"class {tc.name}: shape batch {batch} is over model {info.name}'s max_batch_size "
                         f"{info.max_batch_size}; use at most {info.max_batch_size} rows")


def _plan_one(tc: TrafficClass, t: TensorInfo, model: str) -> PlannedInput:
    own = tc.input(t.name)
    send = own.send if own is not None and own.send is not None else not t.optional
    if not send and not t.optional:
        raise ValueError(f"class {tc.name}: input {t.name} of {model} is required (not optional in its config); "
                         "it is always sent: drop send: false")
    if own is not None and own.dims is not None:
        dims, where = own.dims, f"inputs.{t.name}.dims"
    elif tc.shape.dims is not None and -1 in t.dims:
        dims, where = tc.shape.dims, "shape.dims"
    else:
        dims, where = t.dims, ""
    if where:
        check_dims(dims, t, f"class {tc.name}: {where} {list(dims)}")
    if tc.shape.kind == "fixed":
        dims = fill(dims, 1)  # a -1 nobody sized: one element along it
    return PlannedInput(t, send, tuple(dims))


def check_dims(dims: tuple[int, ...], t: TensorInfo, what: str) -> None:
    """Raise ValueError when dims (without batch) do not fit an input's served dims (-1 fits any length)."""
    if len(dims) != len(t.dims) or any(s not in (-1, d) for s, d in zip(t.dims, dims)):
        fixed = [f"dim {i} = {d}" for i, d in enumerate(t.dims) if d != -1]
        need = f"{len(t.dims)} dim{'' if len(t.dims) == 1 else 's'}" + (f" with {', '.join(fixed)}" if fixed else "")
        raise ValueError(f"{what} does not fit input {t.name}, served as {list(t.dims)}: give {need} (a -1 takes "
                         "any length)")


def _listing(plan: list[PlannedInput]) -> str:
    return ", ".join(f"{p.tensor.name} {list(p.dims)}" for p in plan if p.send) or "none sent"


def sent_shape(tc: TrafficClass, info: ModelInfo, p: PlannedInput) -> str:
    """Return the shape one input is sent with, batch included, in words: '[1, 16]', '[4, 8..128]', 'not sent'."""
    if not p.send:
        return "not sent"
    lead = [str(tc.shape.batch)] if info.max_batch_size > 0 else []
    dims = [tc.shape.describe() if d == -1 else str(d) for d in p.dims]
    return f"[{', '.join(lead + dims)}]"
