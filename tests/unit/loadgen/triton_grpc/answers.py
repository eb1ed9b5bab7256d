"""Stream answers as Triton sends them, made by hand."""
from __future__ import annotations

from tritonclient.grpc import service_pb2


def answer(request_id: str, final: bool = False, outputs: int = 1,
           error: str = "") -> service_pb2.ModelStreamInferResponse:
    response = service_pb2.ModelStreamInferResponse(error_message=error)
    response.infer_response.id = request_id
    for i in range(outputs):
        response.infer_response.outputs.add(name=f"OUT{i}", datatype="INT32", shape=[1])
    if final:
        response.infer_response.parameters["triton_final_response"].bool_param = True
    return response
