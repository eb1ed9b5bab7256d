"""The smoke check of a decoupled model after a reload: one request built from its config, over the gRPC stream."""
from __future__ import annotations

import dataclasses

import pytest

from app.config import read_config
from app.config.verify import SmokeFailure, answer_check, verify
from app.server.free_ports import free_port
from tests.contract.loadgen.fanout_kit import start_fanout


@pytest.fixture(scope="module")
def fanout(tmp_path_factory):
    """A server of the third-party fanout (COUNT=n -> INDEX 0..n-1, then the final flag); stopped at the end."""
    server = start_fanout(tmp_path_factory.mktemp("fanout"))
    yield server
    server.stop()


def fanout_config(server):
    return read_config(server.options.model_repository / "fanout" / "config.pbtxt")


def test_any_decoupled_model_is_checked_over_the_stream(fanout):
    # no lab.json: the request is built from the config alone; an integer input is sent as 1
    assert answer_check(fanout.options.model_repository, "fanout") is None
    said = verify(fanout.endpoint, "fanout", fanout_config(fanout), None)
    assert said == "READY; a streamed smoke request got 1 response(s) (INDEX [1]) and the final flag"


def test_a_token_stream_check_holds_any_counting_stream_to_its_order(fanout):
    # the token_stream answer asks for 3 and wants 0, 1, 2 in order: fanout's INDEX is such a stream
    said = verify(fanout.endpoint, "fanout", fanout_config(fanout), "token_stream")
    assert said == "READY; a 3-token generation streamed 3 tokens"


def test_a_refused_request_fails_the_check_in_the_servers_words(fanout):
    config = fanout_config(fanout)
    config.input[0].dims[:] = [2]  # the served model wants [1]: the server refuses the request
    with pytest.raises(SmokeFailure, match="unexpected shape for input 'COUNT'"):
        verify(fanout.endpoint, "fanout", config, None)


def test_an_unreachable_stream_fails_the_check_naming_its_address(fanout):
    endpoint = dataclasses.replace(fanout.endpoint, grpc_url=f"127.0.0.1:{free_port()}")
    with pytest.raises(SmokeFailure, match=f"over gRPC {endpoint.grpc_url} failed: gRPC UNAVAILABLE"):
        verify(endpoint, "fanout", fanout_config(fanout), None, timeout_s=5.0)


def test_token_sim_still_streams_its_generation(triton):
    config = read_config(triton.repo / "token_sim" / "config.pbtxt")
    said = verify(triton.endpoint, "token_sim", config, answer_check(triton.repo, "token_sim"))
    assert said == "READY; a 3-token generation streamed 3 tokens"
