"""The three batchings: each model's scheduler checked against what the model is."""
from __future__ import annotations

from app.config.model_config import read_config
from app.fit import check
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
