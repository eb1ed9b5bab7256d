"""Concurrent sequences on a stateful model: correlation IDs, START/END, verified running sums."""
from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from random import Random

import numpy as np

from loadgen.bound import Bound
from loadgen.classes import Target, request_parameters
from loadgen.client import RequestPath
from loadgen.connection import Response
from loadgen.inputs.metadata import ModelInfo
from loadgen.outcome import Outcome
from loadgen.inputs.payload import decode_outputs, http_request, infer_body, numpy_dtype
from loadgen.spec import SequenceSpec


def correlation_ids(base: int | None = None) -> Iterator[int]:
    """Yield fresh correlation IDs, distinct from earlier runs against the same server."""
    start = base if base is not None else (time.time_ns() // 1000) % (1 << 52)
    return itertools.count(start + 1)


@dataclass(frozen=True)
class SequenceModel:
    """How to build one step of a sequence for a model."""

    target: Target
    info: ModelInfo
    host: str

    def step(self, value: int, sequence_id: int, start: bool, end: bool) -> bytes:
        """Return the request of one step carrying `value` in every element of every input."""
        lead = (1,) if self.info.max_batch_size > 0 else ()
        tensors = [
            (t.name, t.datatype, np.full(lead + tuple(max(d, 1) for d in t.dims), value, numpy_dtype(t.datatype)))
            for t in self.info.inputs
        ]
        params = {"sequence_id": sequence_id, "sequence_start": start, "sequence_end": end}
        params.update(request_parameters(self.target.priority))
        body, head = infer_body(tensors, params)
        return http_request(self.host, self.target.model, body, head)


def running_sum_check(expected: int):
    """Return a check that the response's first output element equals expected."""

    def check(response: Response) -> bool:
        outputs = decode_outputs(response)
        return bool(outputs) and int(next(iter(outputs.values())).reshape(-1)[0]) == expected

    return check


class SequenceDriver:
    """Keep `count` sequences going; each slot plays sequences one after another, steps in order."""

    def __init__(self, spec: SequenceSpec, model: SequenceModel, path: RequestPath, bound: Bound, rng: Random,
                 ids: Iterator[int]) -> None:
        self.spec, self.model, self.path, self.bound, self.rng, self.ids = spec, model, path, bound, rng, ids

    async def run(self) -> None:
        """Run the slots until the bound closes."""
        await asyncio.gather(*(self._slot() for _ in range(self.spec.count)))

    async def _slot(self) -> None:
        while self.bound.is_open():
            await self._sequence(next(self.ids), self.spec.length.sample(self.rng))

    async def _sequence(self, sequence_id: int, length: int) -> None:
        path, total = self.path, 0
        for step in range(length):
            if not self.bound.take():
                return
            value = self.rng.randint(1, 9)
            total += value
            data = self.model.step(value, sequence_id, step == 0, step == length - 1)
            check = running_sum_check(total) if self.spec.verify else None
            record = await path.send(self.model.target, data, None, sequence_id, check)
            if record.outcome not in (Outcome.OK, Outcome.WRONG_OUTPUT):
                return  # no answer: the server's state is unknown, start a fresh sequence
            if self.spec.think_ms > 0 and step < length - 1:
                await asyncio.sleep(self.spec.think_ms / 1000.0)
