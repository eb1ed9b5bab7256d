"""The stateful model is right under sequence batching and detectably wrong without it."""
from __future__ import annotations

import numpy as np
import tritonclient.http as http

from tests.helpers import read_config, reload


def _step(client, value: int, seq: int, start: bool, end: bool) -> int:
    inp = http.InferInput("INPUT", [1, 1], "INT32")
    inp.set_data_from_numpy(np.array([[value]], np.int32))
    out = client.infer("stream_acc", [inp], sequence_id=seq, sequence_start=start, sequence_end=end)
    return int(out.as_numpy("OUTPUT")[0, 0])


def _interleave(host_port: str, n_seq: int = 4, length: int = 6) -> tuple[int, int]:
    """Step n_seq sequences round-robin; return (right, wrong) outputs against the running sums."""
    client = http.InferenceServerClient(host_port)
    sums = [0] * n_seq
    right = wrong = 0
    for step in range(length):
        for s in range(n_seq):
            value = 10 * s + step + 1
            sums[s] += value
            got = _step(client, value, seq=1000 + s, start=step == 0, end=step == length - 1)
            right, wrong = (right + 1, wrong) if got == sums[s] else (right, wrong + 1)
    return right, wrong


def test_sequence_batching_keeps_each_sequence_state(triton):
    right, wrong = _interleave(triton.endpoint.host_port)
    assert (right, wrong) == (24, 0)


def test_dynamic_batching_scrambles_interleaved_sequences(triton, restore_model):
    restore_model("stream_acc")
    config = read_config(triton.repo, "stream_acc")
    config.ClearField("sequence_batching")
    config.dynamic_batching.max_queue_delay_microseconds = 100
    reload(triton.endpoint, "stream_acc", config)
    right, wrong = _interleave(triton.endpoint.host_port)
    assert wrong >= 20  # every step after the first sequence's first mixes in other sequences' values
