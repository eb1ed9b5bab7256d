"""One request over Triton's gRPC stream, synchronously, every response kept: the smoke check of a decoupled model."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import grpc
import numpy as np
from tritonclient.grpc import InferResult, service_pb2

from loadgen.triton_grpc.grpc_request import STREAM_METHOD, carries_data, is_final, with_id


@dataclass(frozen=True)
class StreamAnswer:
    """What one streamed request got: each data response's outputs, whether the final flag came, the first error."""

    responses: tuple[dict[str, np.ndarray], ...]
    final: bool
    error: str  # the server's text, the stream's failure, or the time limit; '' when the stream ended right
    first_s: float | None  # from sending to the first data response
    done_s: float  # from sending to the end

    @property
    def ok(self) -> bool:
        return self.final and not self.error


def stream_once(target: str, request: bytes, timeout_s: float = 15.0) -> StreamAnswer:
    """Send one encoded request (loadgen.triton_grpc.grpc_request.encode_request) on a new stream; read until its final response,
    an error, or timeout_s."""
    answers: list[dict[str, np.ndarray]] = []
    final, error, first = False, "", None
    ended = threading.Event()

    def requests():
        yield with_id(request, "smoke")
        ended.wait(timeout_s)  # keep the stream open until the answers are in

    start = time.monotonic()
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(STREAM_METHOD, request_serializer=None,
                                     response_deserializer=service_pb2.ModelStreamInferResponse.FromString)
        responses = call(requests(), timeout=timeout_s)
        try:
            for response in responses:
                if response.error_message:
                    error = response.error_message
                    break
                if carries_data(response.infer_response):
                    first = time.monotonic() - start if first is None else first
                    result = InferResult(response.infer_response)
                    answers.append({o.name: result.as_numpy(o.name) for o in response.infer_response.outputs})
                if is_final(response.infer_response):
                    final = True
                    break
            else:
                error = "the server ended the stream before the final response"
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                error = f"no final response within {timeout_s:g} s ({len(answers)} response(s) by then)"
            else:
                error = f"gRPC {exc.code().name}: {exc.details() or 'no detail'}"
        finally:
            ended.set()
            responses.cancel()
    return StreamAnswer(tuple(answers), final, error, first, time.monotonic() - start)
