"""Which knobs a sweep can move on a model, read from the config it serves — and the words for the rest.

A queue delay or preferred batch sizes need dynamic batching, and dynamic batching needs a batch
dimension (max_batch_size > 0): on a model served with max_batch_size 0 they can only be tried together
with a max_batch_size, and giving a model a batch dimension changes what its clients must send (a
contract change). A model with sequence batching keeps its sequences' state per request stream: a queue
delay would replace its sequence batcher with dynamic batching (another contract change), so none is
offered. An ensemble has no instances or queue of its own: its steps are tuned instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.config.ensembles import tuned_at_its_steps
from app.config.model_config import ModelConfig


@dataclass(frozen=True)
class KnobOffer:
    """What a sweep of one model may vary, and why the rest is not offered."""

    instances: bool = True
    batch_sizes: bool = True  # max_batch_size values
    delays: bool = True  # queue delays and preferred batch sizes, as the model serves now
    delays_with_size: bool = True  # the same, once the sweep also sets a max_batch_size above 0
    size_is_contract: bool = False  # setting max_batch_size above 0 gives the model a batch dimension
    why: str = ""  # why queue delays (or more) are not offered; '' when everything is

    def batching(self, sizes: tuple[int, ...] | list[int]) -> bool:
        """Return whether queue delays and preferred sizes may be swept alongside these max_batch_size values."""
        return self.delays or (self.delays_with_size and any(s > 0 for s in sizes))


def knob_offer(config: ModelConfig | None) -> KnobOffer:
    """Return what a sweep may vary on a model serving config (None: not known, so everything is offered)."""
    if config is None:
        return KnobOffer()
    steps = tuned_at_its_steps(config.name or "this model", config)
    if steps:
        return KnobOffer(instances=False, batch_sizes=False, delays=False, delays_with_size=False, why=steps)
    unbatched = config.max_batch_size <= 0
    if config.HasField("sequence_batching"):
        return KnobOffer(delays=False, delays_with_size=False, size_is_contract=unbatched,
                         why="it uses sequence batching: a queue delay or preferred sizes would replace it with "
                             "dynamic batching, and its sequences would lose their state")
    if unbatched:
        return KnobOffer(delays=False, size_is_contract=True,
                         why="it serves max_batch_size 0 (no batch dimension), and dynamic batching needs "
                             "max_batch_size > 0: choose max_batch_size values to try queue delays with them")
    return KnobOffer()
