"""Traffic classes made ready to send: pre-encoded requests, limits, and a weighted picker."""
from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from random import Random

import numpy as np

from loadgen.inputs.metadata import ModelInfo
from loadgen.inputs.tensors import tensor_variants
from loadgen.inputs.payload import http_request, infer_body
from loadgen.spec import RetryPolicy, TrafficClass


@dataclass(frozen=True)
class Target:
    """Where and how one class's requests go: model, priority, client timeout, retries."""

    cls: str
    model: str
    priority: int = 0
    timeout_s: float | None = None
    retry: RetryPolicy = RetryPolicy()


@dataclass(frozen=True)
class PreparedClass:
    """A class ready to send: its target and one pre-encoded request per variant (shapes, or entries of its data)."""

    target: Target
    requests: tuple[bytes, ...]

    def pick(self, rng: Random) -> bytes:
        """Return the bytes of the next request (a random variant when there are several)."""
        reqs = self.requests
        return reqs[0] if len(reqs) == 1 else reqs[rng.randrange(len(reqs))]


def make_target(cls: str, model: str, priority: int, timeout_ms: float | None,
                retry: RetryPolicy | None = None) -> Target:
    """Return the Target of a class or sequence group (timeout given in milliseconds)."""
    timeout_s = None if timeout_ms is None else timeout_ms / 1000.0
    return Target(cls, model, priority, timeout_s, retry or RetryPolicy())


def request_parameters(priority: int, server_timeout_us: int | None = None) -> dict:
    """Return Triton request parameters for a priority level and queue timeout (unset ones omitted)."""
    params = {}
    if priority:
        params["priority"] = priority
    if server_timeout_us:
        params["timeout"] = int(server_timeout_us)
    return params


def prepare_class(tc: TrafficClass, model: str, info: ModelInfo, host: str, seed: int | None) -> PreparedClass:
    """Encode every shape variant of a class once, so sending costs one write."""
    target = make_target(tc.name, model, tc.priority, tc.timeout_ms, tc.retry)
    params = request_parameters(tc.priority, tc.server_timeout_us)
    requests = []
    for tensors in tensor_variants(tc, info, np.random.default_rng(seed)):
        body, head = infer_body(tensors, params)
        requests.append(http_request(host, model, body, head))
    return PreparedClass(target, tuple(requests))


def prepare_classes(spec, infos: dict[str, ModelInfo], host: str, rng: Random) -> dict[str, PreparedClass]:
    """Prepare every class of a LoadSpec (infos: each model's metadata), seeded in class order from rng."""
    return {tc.name: prepare_class(tc, spec.class_model(tc), infos[spec.class_model(tc)], host, rng.randrange(1 << 30))
            for tc in spec.classes}


class ClassPicker:
    """Choose among classes in proportion to their shares."""

    def __init__(self, classes: list[PreparedClass], shares: list[float], rng: Random) -> None:
        self.classes, self.rng = classes, rng
        self._cumulative = list(itertools.accumulate(shares))

    def pick(self) -> PreparedClass:
        """Return the class of the next request."""
        if len(self.classes) == 1:
            return self.classes[0]
        return self.classes[bisect.bisect_right(self._cumulative, self.rng.random() * self._cumulative[-1])]
