"""Drive a model of the third-party server with a class, and read back what each of the class's requests got."""
from __future__ import annotations

import asyncio
from urllib.parse import urlparse

import numpy as np

from loadgen.classes import prepare_class
from loadgen.connection import BlockingConnection
from loadgen.inputs.metadata import fetch_model
from loadgen.inputs.payload import decode_outputs, error_message
from loadgen.inputs.tensors import tensor_variants
from loadgen.outcome import Outcome
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec, TrafficClass


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
