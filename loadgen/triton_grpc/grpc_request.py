"""Triton's gRPC stream requests, encoded once: a class's tensors as serialized ModelInferRequests, and the
answers' flags (the final response of each request says so: enable_empty_final_response)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tritonclient.grpc import service_pb2

from loadgen.classes import PreparedClass, make_target, request_parameters
from loadgen.inputs.tensors import Tensors, tensor_variants
from loadgen.inputs.metadata import ModelInfo
from loadgen.inputs.payload import tensor_bytes
from loadgen.spec import TrafficClass

STREAM_METHOD = "/inference.GRPCInferenceService/ModelStreamInfer"
FINAL = "triton_final_response"  # the response parameter that marks a request's last response
_UINT_PARAMETERS = {"priority"}  # Triton reads priority as uint64, the queue timeout as int64


@dataclass(frozen=True)
class StreamedClass(PreparedClass):
    """A class of a decoupled model: each request is a serialized ModelInferRequest without an id (with_id adds it)."""


def encode_request(model: str, tensors: Tensors, parameters: dict | None = None) -> bytes:
    """Return a serialized ModelInferRequest asking for an empty final response; priority/timeout as parameters."""
    request = service_pb2.ModelInferRequest(model_name=model)
    for name, datatype, array in tensors:
        request.inputs.add(name=name, datatype=datatype, shape=[int(d) for d in np.shape(array)])
        request.raw_input_contents.append(tensor_bytes(datatype, array))
    for key, value in (parameters or {}).items():
        if key in _UINT_PARAMETERS:
            request.parameters[key].uint64_param = int(value)
        else:
            request.parameters[key].int64_param = int(value)
    request.parameters["triton_enable_empty_final_response"].bool_param = True
    return request.SerializeToString()


def with_id(request: bytes, request_id: str) -> bytes:
    """Return the request with its id set: a serialized field appended to a message sets that field (protobuf)."""
    return request + service_pb2.ModelInferRequest(id=request_id).SerializeToString()


def prepare_streamed(tc: TrafficClass, model: str, info: ModelInfo, seed: int | None) -> StreamedClass:
    """Encode every request variant of a class of a decoupled model once, as the HTTP path pre-encodes its own."""
    target = make_target(tc.name, model, tc.priority, tc.timeout_ms, tc.retry)
    params = request_parameters(tc.priority, tc.server_timeout_us)
    requests = tuple(encode_request(model, tensors, params)
                     for tensors in tensor_variants(tc, info, np.random.default_rng(seed)))
    return StreamedClass(target, requests)


def is_final(response: service_pb2.ModelInferResponse) -> bool:
    """Return True for a request's last response."""
    params = response.parameters
    return FINAL in params and params[FINAL].bool_param


def carries_data(response: service_pb2.ModelInferResponse) -> bool:
    """Return True unless the response is the empty one that only says the request is complete."""
    return not is_final(response) or len(response.outputs) > 0
