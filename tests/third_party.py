"""The third-party-style repository of the tests (tests/third_party_repository), copied where a test may change it."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SOURCE = Path(__file__).resolve().parent / "third_party_repository"
MODELS = ("fanout", "onnx_plain", "pipe_offset", "pipe_scale", "pipeline", "py_auto", "text_len", "two_inputs",
          "var_dims", "versioned")


def onnx_model() -> onnx.ModelProto:
    """Return a small ONNX graph: Y[-1, 3] = X[-1, 4] @ W (fixed weights), as a user's exported model would be."""
    weights = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0, "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "plain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="someone-else")
    model.ir_version = 8
    return model


def copy_repository(target: Path) -> Path:
    """Copy the repository to target (a new folder) and write onnx_plain's model.onnx; return target."""
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("README.md", "__pycache__"))
    (target / "onnx_plain" / "1" / "model.onnx").write_bytes(onnx_model().SerializeToString())
    return target


def embedded_lab_on_a_copy(base: Path):
    """Return a context that yields a Lab whose embedded server serves a copy of the repository under base (its
    state there too)."""
    from tests.helpers import embedded_lab_serving  # noqa: PLC0415 - tests.helpers imports the app

    return embedded_lab_serving(copy_repository(base / "repo"), base / "state")
