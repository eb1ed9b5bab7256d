"""The load generator's contract tests: besides the session's tritonserver (tests/servers.py), one serving models of
the third-party repository (tests/third_party_repository) and a string echo of these tests' own, shared by the gRPC
stream path's tests (the decoupled `fanout`) and the inputs' (strings, -1 dims, optional and unbatched inputs)."""
from __future__ import annotations

import pytest

from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.endpoint import Endpoint
from tests.contract.loadgen.serverkit import add_bench_model, remove_bench_model
from tests.third_party import copy_repository

MODELS = ("fanout", "two_inputs", "text_len", "var_dims", "text_echo")
ECHO_CONFIG = """name: "text_echo"
backend: "python"
max_batch_size: 8
input [ { name: "TEXT", data_type: TYPE_STRING, dims: [ -1 ] } ]
output [ { name: "ECHO", data_type: TYPE_STRING, dims: [ -1 ] } ]
"""
ECHO_MODEL = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "ECHO", pb_utils.get_input_tensor_by_name(r, "TEXT").as_numpy())]) for r in requests]
'''


@pytest.fixture(scope="session")
def third_party_server(tmp_path_factory) -> EmbeddedServer:
    """A server of the third-party models (and text_echo) for the session; stopped at its end."""
    base = tmp_path_factory.mktemp("third_party")
    repo = copy_repository(base / "repo")
    (repo / "text_echo" / "1").mkdir(parents=True)
    (repo / "text_echo" / "config.pbtxt").write_text(ECHO_CONFIG)
    (repo / "text_echo" / "1" / "model.py").write_text(ECHO_MODEL)
    server = EmbeddedServer(ServerOptions(model_repository=repo, models=MODELS, http_port=None, grpc_port=None,
                                          metrics_port=None, log_dir=base))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def third_party(third_party_server) -> Endpoint:
    """The third-party server's addresses. A server that died fails the test it died in, with its log, and is started
    again for the next: tritonserver 2.51's gRPC stream can abort (test_grpc_path.py's refusal test says when)."""
    server = third_party_server
    if not server.running():  # died after the last test's check
        server.restart()
    yield server.endpoint
    if not server.running():
        said = server.log_tail(25)
        server.restart()
        pytest.fail(f"the third-party server died during this test and was started again; its log ended:\n{said}")


@pytest.fixture(scope="module")
def identity(triton):
    """Serve the bench model `identity` on the session's server for a module's tests (identity_spec loads it)."""
    add_bench_model(triton, "identity")
    yield
    remove_bench_model(triton, "identity")
