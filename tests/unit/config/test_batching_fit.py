"""The three batchings: each model's scheduler checked against what the model is."""
from __future__ import annotations

from app.config.model_config import read_config
from app.config.batching_fit import check
from app.paths import MODEL_REPOSITORY


def _config(model):
    return read_config(MODEL_REPOSITORY / model / "config.pbtxt")


def test_shipped_models_are_batched_right():
    assert check("gpu_sim", _config("gpu_sim")).ok
    fit = check("stream_acc", _config("stream_acc"))
    assert (fit.kind, fit.batching, fit.ok) == ("stateful", "sequence", True)


def test_stateful_model_under_dynamic_batching_is_broken():
    config = _config("stream_acc")
    config.parameters["model_kind"].string_value = "stateful"
    config.ClearField("sequence_batching")
    config.dynamic_batching.max_queue_delay_microseconds = 100
    fit = check("stream_acc", config)
    assert not fit.ok and "corrupted" in fit.verdict


def test_stateless_model_under_sequence_batching_is_wasteful():
    config = _config("gpu_sim")
    config.ClearField("dynamic_batching")
    config.sequence_batching.max_sequence_idle_microseconds = 1000
    fit = check("gpu_sim", config)
    assert not fit.ok and "wasteful" in fit.verdict


def test_autoregressive_model_in_flight_inside_the_model_is_right():
    fit = check("token_sim", _config("token_sim"))
    assert (fit.kind, fit.batching, fit.ok) == ("autoregressive", "none", True)
    assert "finished sequences leave and new ones join" in fit.verdict


def test_autoregressive_model_under_dynamic_batching_is_misuse():
    config = _config("token_sim")
    config.parameters["batching"].string_value = "request"
    config.dynamic_batching.max_queue_delay_microseconds = 2000
    fit = check("token_sim", config)
    assert not fit.ok and "misuse" in fit.verdict
    config.ClearField("dynamic_batching")  # request mode without a batcher: each generation alone
    fit = check("token_sim", config)
    assert fit.ok and "runs alone" in fit.verdict


def _third_party(model):
    from tests.third_party import SOURCE  # noqa: PLC0415

    return read_config(SOURCE / model / "config.pbtxt")


def test_a_decoupled_model_is_judged_as_streaming():
    fit = check("fanout", _third_party("fanout"))  # decoupled, max_batch_size 0, no scheduler, no lab.json
    assert (fit.kind, fit.batching, fit.ok, fit.streams) == ("stateless", "none", True, True)
    assert fit.described == "stateless, streams responses (decoupled)"
    assert "no batch dimension" in fit.verdict and "streams its responses" in fit.verdict
    assert "dynamic batching would add throughput" not in fit.verdict


def test_a_batching_decoupled_model_is_never_called_plain_stateless():
    config = _third_party("fanout")
    config.max_batch_size = 8
    alone = check("fanout", config)
    assert alone.ok and "runs alone" in alone.verdict and "streams its responses" in alone.verdict
    config.dynamic_batching.max_queue_delay_microseconds = 100
    batched = check("fanout", config)
    assert batched.ok and "each streaming its own responses" in batched.verdict


def test_a_stateful_decoupled_model_needs_its_sequence_batcher_and_says_it_streams():
    config = _config("stream_acc")
    config.model_transaction_policy.decoupled = True
    fit = check("stream_acc", config)
    assert (fit.kind, fit.ok, fit.streams) == ("stateful", True, True) and "streams" in fit.verdict
    config.ClearField("sequence_batching")
    assert not check("stream_acc", config).ok


def test_a_plain_model_without_a_batch_dimension_cannot_batch():
    fit = check("two_inputs", _third_party("two_inputs"))  # max_batch_size 0, not decoupled
    assert (fit.ok, fit.streams, fit.described) == (True, False, "stateless") and "batching cannot" in fit.verdict


def test_the_labs_token_generator_streams_and_keeps_its_verdict():
    fit = check("token_sim", _config("token_sim"))
    assert fit.streams and fit.described == "autoregressive, streams responses (decoupled)"
    assert fit.verdict == ("right: in-flight batching inside the model: finished sequences leave and new ones join "
                           "at every step")
