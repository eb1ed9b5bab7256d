"""The tensors a traffic class sends: one list of (name, datatype, array) per request variant."""
from __future__ import annotations

import numpy as np

from loadgen.metadata import ModelInfo
from loadgen.payload import random_tensor
from loadgen.spec import TrafficClass

Tensors = list[tuple[str, str, np.ndarray]]


def tensor_variants(tc: TrafficClass, info: ModelInfo, rng: np.random.Generator) -> list[Tensors]:
    """Return the input tensors of each request variant a class sends (batch dimension included when the model
    batches); the HTTP and gRPC request paths both encode these."""
    variants = [tc.shape.shapes(t.dims) for t in info.inputs]
    lead = (tc.shape.batch,) if info.max_batch_size > 0 else ()
    return [[(t.name, t.datatype, random_tensor(t.datatype, lead + s, rng)) for t, s in zip(info.inputs, shapes)]
            for shapes in zip(*variants)]
