"""Does a model's batching match what the model is, as served? (the three batchings)

What a model is: the lab's `model_kind` parameter when present (token_sim: autoregressive), else stateful when its
sequence batching has control inputs, else stateless; and whether it streams (decoupled: zero or more responses
per request, over the gRPC stream), which every verdict on such a model says.
"""
from __future__ import annotations

from dataclasses import dataclass

KIND_PARAMETER = "model_kind"  # config parameter: stateless | stateful | autoregressive
BATCHING_PARAMETER = "batching"  # an autoregressive model's own batching (token_sim): inflight | request
OWN_BATCHING = {  # an autoregressive model without Triton's dynamic batching, by its batching parameter
    "inflight": (True, ("right: in-flight batching inside the model: finished sequences leave and new ones join "
                        "at every step")),
    "request": (True, ("works, but every generation runs alone — in-flight batching in the model would add "
                       "throughput")),
}
STREAMS = "it streams its responses (decoupled): judge it by responses/s and time to first response"
VERDICTS = {
    ("stateless", "dynamic"): (True, "right: one-shot requests batched by the scheduler"),
    ("stateless", "none"): (True, "works, but every request runs alone — dynamic batching would add throughput"),
    ("stateless", "sequence"): (False, "wasteful: sequence slots and correlation IDs for a model with no state"),
    ("stateful", "sequence"): (True, "right: each sequence stays on its slot, in order"),
    ("stateful", "dynamic"): (False, "broken: requests of different sequences are mixed, state is corrupted"),
    ("stateful", "none"): (False, "broken: no correlation routing; state is shared across sequences"),
    ("autoregressive", "dynamic"): (False, "misuse: requests finish at different decode steps; use in-flight "
                                           "batching in the backend"),
}
STREAMING_VERDICTS = {  # a decoupled model's requests each stream their own responses, whatever the batch
    ("stateless", "dynamic"): (True, "right: the scheduler hands the model several requests per execution, each "
                                     "streaming its own responses"),
    ("stateless", "none"): (True, "works, but every request runs alone — dynamic batching would hand the model "
                                  "several per execution (more throughput if it computes them together)"),
}
UNBATCHED = (True, "right: no batch dimension (max_batch_size 0), so each instance runs one request at a time — "
                   "more instances add throughput, batching cannot")


@dataclass(frozen=True)
class Fit:
    """A verdict on one model's batching."""

    model: str
    kind: str
    batching: str
    ok: bool
    verdict: str
    streams: bool = False  # decoupled: zero or more responses per request, over the gRPC stream

    @property
    def described(self) -> str:
        """Return what the model is, in words: 'stateless', 'stateful, streams responses (decoupled)'."""
        return f"{self.kind}, streams responses (decoupled)" if self.streams else self.kind


def model_kind(config) -> str:
    """Return what the model is: its `model_kind` parameter, else stateful when it has control inputs."""
    param = config.parameters.get(KIND_PARAMETER)
    if param is not None and param.string_value:
        return param.string_value
    has_controls = config.HasField("sequence_batching") and len(config.sequence_batching.control_input) > 0
    return "stateful" if has_controls else "stateless"


def streams(config) -> bool:
    """Return True for a decoupled model: it answers over a stream, zero or more responses per request."""
    return bool(config.model_transaction_policy.decoupled)


def batching_of(config) -> str:
    """Return which scheduler the config asks for."""
    if config.HasField("sequence_batching"):
        return "sequence"
    if config.HasField("dynamic_batching"):
        return "dynamic"
    return "none"


def check(name: str, config) -> Fit:
    """Return the verdict for a model's config."""
    kind, batching, streaming = model_kind(config), batching_of(config), streams(config)
    ok, verdict = VERDICTS.get((kind, batching), (batching != "dynamic", "in-flight batching belongs to the backend "
                                                                          "(TRT-LLM, vLLM)"))
    if streaming:
        ok, verdict = STREAMING_VERDICTS.get((kind, batching), (ok, verdict))
    if (kind, batching) == ("stateless", "none") and config.max_batch_size == 0:
        ok, verdict = UNBATCHED
    own = config.parameters.get(BATCHING_PARAMETER)
    if (kind, batching) == ("autoregressive", "none") and own is not None and own.string_value in OWN_BATCHING:
        ok, verdict = OWN_BATCHING[own.string_value]
    if streaming and kind != "autoregressive":  # a generation streams by definition; any other model says so
        verdict = f"{verdict}; {STREAMS}"
    return Fit(name, kind, batching, ok, verdict, streaming)
