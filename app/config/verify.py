"""After a reload: is the model READY, and does a smoke request built from its config get the right answer?

A decoupled model is asked over Triton's gRPC stream (HTTP infer refuses it): the request must end with the final
flag and no error.
"""
from __future__ import annotations

import json
import random

import numpy as np
import tritonclient.http as triton_http
from tritonclient.grpc import model_config_pb2 as pb

from app.config.model_config import ModelConfig
from app.config.batching_fit import check
from app.server.endpoint import Endpoint
from app.server.repository import ModelNameError, model_dir
from loadgen.triton_grpc.once import StreamAnswer, stream_once
from loadgen.triton_grpc.grpc_path import grpc_target
from loadgen.triton_grpc.grpc_request import encode_request

STEPS = (3, 4, 5)  # the smoke sequence of a stateful model: expected running sums 3, 7, 12
GENERATION_TOKENS = 3  # the smoke generation of a token generator (lab.json answer "token_stream")
STREAMED_INT = 1  # a decoupled model's integer inputs in its smoke request: a count-like input asks for one answer


class SmokeFailure(Exception):
    """The model did not serve the smoke request right; the message says what went wrong."""


def answer_check(repo, model: str) -> str | None:
    """Return the model's answer check (identity, running_sum, softmax) from its folder's lab.json."""
    if repo is None:
        return None
    try:
        path = model_dir(repo, model) / "lab.json"
        return json.loads(path.read_text()).get("answer") if path.is_file() else None
    except (ModelNameError, OSError, ValueError):
        return None


def verify(endpoint: Endpoint, model: str, config: ModelConfig, answer: str | None, timeout_s: float = 15.0) -> str:
    """Return what was checked; raise SmokeFailure when the model is not READY or answers wrongly.

    The answer itself is checked only when the scheduler fits the model: a stateful model put on
    dynamic batching on purpose (to show the failure) must still answer, but not right.
    """
    client = triton_http.InferenceServerClient(endpoint.host_port, network_timeout=timeout_s)
    try:
        if not client.is_model_ready(model):
            raise SmokeFailure(f"{model} is not READY after the reload")
        if config.model_transaction_policy.decoupled:
            return _streamed(endpoint, model, config, answer, timeout_s)
        fits = check(model, config).ok
        if config.HasField("sequence_batching"):
            sums = _sequence(client, model, config)
            if fits and answer == "running_sum" and sums != [3, 7, 12]:
                raise SmokeFailure(f"a 3-step sequence 3, 4, 5 answered {sums}, not the running sums [3, 7, 12]")
            return f"READY; a 3-step sequence answered {sums}"
        inputs, arrays = _request(config)
        result = client.infer(model, inputs, outputs=[triton_http.InferRequestedOutput(o.name) for o in config.output])
        got = {o.name: result.as_numpy(o.name) for o in config.output}
        missing = [name for name, value in got.items() if value is None]
        if missing:
            raise SmokeFailure(f"the reply lacks output(s) {missing}")
        if fits:
            _check_answer(answer, arrays, got)
        return f"READY; a smoke request answered {', '.join(f'{k} {list(v.shape)}' for k, v in got.items())}"
    except SmokeFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the request is the model not serving
        raise SmokeFailure(f"a smoke request failed: {_short(exc)}") from exc


def _shape(tensor, batched: bool) -> list[int]:
    dims = [d if d > 0 else 1 for d in tensor.dims]
    return [1, *dims] if batched else dims


def _tensors(config: ModelConfig, int_value: int | None = None) -> list[tuple[str, str, np.ndarray]]:
    """Return (name, datatype, array) of each required input; int_value fills integer inputs (else arange / 10)."""
    out = []
    for tensor in config.input:
        if getattr(tensor, "optional", False):
            continue
        dtype = pb.DataType.Name(tensor.data_type).removeprefix("TYPE_").replace("STRING", "BYTES")
        shape = _shape(tensor, config.max_batch_size > 0)
        data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) / 10.0
        if dtype == "BYTES":  # the text of each number, as tritonclient sends non-bytes objects
            array = np.array([str(v).encode() for v in data.reshape(-1)], dtype=np.object_).reshape(shape)
        else:
            array = data.astype(triton_http.triton_to_np_dtype(dtype))
        if int_value is not None and array.dtype.kind in "iu":
            array = np.full(shape, int_value, array.dtype)
        out.append((tensor.name, dtype, array))
    return out


def _request(config: ModelConfig) -> tuple[list, list[np.ndarray]]:
    inputs, arrays = [], []
    for name, dtype, array in _tensors(config):
        item = triton_http.InferInput(name, list(array.shape), dtype)
        item.set_data_from_numpy(array)
        inputs.append(item)
        arrays.append(array)
    return inputs, arrays


def _check_answer(answer: str | None, arrays: list[np.ndarray], got: dict) -> None:
    if answer == "identity":
        (out,) = got.values()
        if out.shape != arrays[0].shape or not np.array_equal(out, arrays[0]):
            raise SmokeFailure("the identity model did not return its input")
    elif answer == "softmax":
        (out,) = got.values()
        if out.min() < 0 or not np.allclose(out.sum(axis=-1), 1.0, atol=1e-3):
            raise SmokeFailure(f"the softmax output does not sum to 1 (sums {out.sum(axis=-1).tolist()})")


def _sequence(client, model: str, config: ModelConfig) -> list[int]:
    tensor = config.input[0]
    dtype = pb.DataType.Name(tensor.data_type).removeprefix("TYPE_")
    shape = _shape(tensor, config.max_batch_size > 0)
    sequence_id = random.randrange(1 << 40, 1 << 50)
    sums = []
    for i, value in enumerate(STEPS):
        item = triton_http.InferInput(tensor.name, shape, dtype)
        item.set_data_from_numpy(np.full(shape, value, dtype=triton_http.triton_to_np_dtype(dtype)))
        result = client.infer(model, [item], sequence_id=sequence_id, sequence_start=i == 0,
                              sequence_end=i == len(STEPS) - 1)
        sums.append(int(result.as_numpy(config.output[0].name).reshape(-1)[0]))
    return sums


def _streamed(endpoint: Endpoint, model: str, config: ModelConfig, answer: str | None, timeout_s: float) -> str:
    """A decoupled model answers over the gRPC stream: one request built from the config must end with the final
    flag and no error; a token generator's (answer token_stream) must stream tokens 0..n-1 in order."""
    tokens = answer == "token_stream"
    tensors = _tensors(config, GENERATION_TOKENS if tokens else STREAMED_INT)
    target = grpc_target(endpoint.http_url, endpoint.grpc_url)
    got = stream_once(target, encode_request(model, tensors), timeout_s)
    if not got.ok:
        raise SmokeFailure(f"a streamed smoke request over gRPC {target} failed: {_cut(got.error)}")
    if tokens:
        values = _stream_values(got)
        if values != list(range(GENERATION_TOKENS)):
            raise SmokeFailure(f"a {GENERATION_TOKENS}-token generation streamed {values}, not the tokens "
                               f"{list(range(GENERATION_TOKENS))} in order")
        return f"READY; a {GENERATION_TOKENS}-token generation streamed {len(values)} tokens"
    shapes = sorted({f"{k} {list(v.shape)}" for r in got.responses for k, v in r.items()})
    return (f"READY; a streamed smoke request got {len(got.responses)} response(s)"
            f"{' (' + ', '.join(shapes) + ')' if shapes else ''} and the final flag")


def _stream_values(got: StreamAnswer) -> list:
    """Return each response's one value (a token generator answers one scalar per response)."""
    values = []
    for response in got.responses:
        arrays = list(response.values())
        values.append(int(arrays[0].reshape(-1)[0]) if len(arrays) == 1 and arrays[0].size == 1 else None)
    return values


def _short(exc: BaseException) -> str:
    return _cut(str(exc).strip() or type(exc).__name__)


def _cut(text: str) -> str:
    return text if len(text) <= 300 else text[:300] + "…"
