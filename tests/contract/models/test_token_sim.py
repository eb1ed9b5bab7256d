"""The simulated autoregressive model on the real server: a generation streams its LENGTH tokens, 0..LENGTH-1 in order,
over generate_stream (SSE) under both batchings; a length it cannot make is refused in words. Which batching serves
newcomers sooner is a measurement: bench/token_sim_batchings.py and the three-batchings scenario."""
from __future__ import annotations

from loadgen.generate_stream import generate_once
from tests.helpers import read_config, reload


def generates_in_order(url: str) -> None:
    record = generate_once(url, "token_sim", 9)
    assert record.ok and record.tokens == 9, record  # generate_once demands tokens 0..8, in order
    refused = generate_once(url, "token_sim", 0)
    assert not refused.ok and "LENGTH must be one integer" in refused.error, refused


def test_a_generation_streams_every_token_in_order_under_both_batchings(triton, restore_model):
    restore_model("token_sim")
    assert read_config(triton.repo, "token_sim").parameters["batching"].string_value == "inflight"  # as shipped
    generates_in_order(triton.url)
    config = read_config(triton.repo, "token_sim")
    config.parameters["batching"].string_value = "request"
    config.dynamic_batching.max_queue_delay_microseconds = 0
    reload(triton.endpoint, "token_sim", config)
    generates_in_order(triton.url)
