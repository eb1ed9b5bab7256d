"""The gRPC stream's requests, encoded once: tensors, parameters, the final-response flag, the id set per send."""
from __future__ import annotations

import numpy as np
from tritonclient.grpc import service_pb2

from loadgen.triton_grpc.grpc_request import carries_data, encode_request, is_final, with_id
from tests.unit.loadgen.triton_grpc.answers import answer


def parsed(data: bytes) -> service_pb2.ModelInferRequest:
    return service_pb2.ModelInferRequest.FromString(data)


def test_a_request_carries_its_tensors_its_parameters_and_asks_for_the_final_flag():
    tensors = [("COUNT", "INT32", np.array([[3]], np.int32)), ("TEXT", "BYTES", np.array([b"ab", b"c"], object))]
    request = parsed(encode_request("fanout", tensors, {"priority": 2, "timeout": 5000}))
    assert request.model_name == "fanout" and request.id == ""
    assert [(t.name, t.datatype, list(t.shape)) for t in request.inputs] == [("COUNT", "INT32", [1, 1]),
                                                                            ("TEXT", "BYTES", [2])]
    assert request.raw_input_contents[0] == (3).to_bytes(4, "little")
    assert request.raw_input_contents[1] == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"  # Triton's length-prefixed BYTES
    assert request.parameters["priority"].uint64_param == 2  # as tritonclient sends them
    assert request.parameters["timeout"].int64_param == 5000
    assert request.parameters["triton_enable_empty_final_response"].bool_param


def test_with_id_sets_the_id_and_keeps_the_rest():
    base = encode_request("m", [("X", "FP32", np.ones(2, np.float32))])
    request = parsed(with_id(base, "42"))
    assert request.id == "42" and request.model_name == "m" and len(request.raw_input_contents) == 1
    assert parsed(with_id(base, "43")).id == "43"


def test_the_empty_final_response_is_no_data_but_a_final_one_with_outputs_is():
    assert not is_final(answer("1").infer_response) and carries_data(answer("1").infer_response)
    assert is_final(answer("1", final=True, outputs=0).infer_response)
    assert not carries_data(answer("1", final=True, outputs=0).infer_response)
    assert carries_data(answer("1", final=True, outputs=1).infer_response)
