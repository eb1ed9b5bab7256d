"""Write the small MLP that the `mlp` model serves: random weights from a fixed seed, no downloads."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS = (64, 256, 256, 10)
SEED = 20261129


def build(seed: int = SEED) -> onnx.ModelProto:
    """Return an MLP INPUT[-1,64] -> Gemm/Relu x2 -> Gemm -> Softmax OUTPUT[-1,10]."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "INPUT"
    for i, (fan_in, fan_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:])):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        b = np.zeros(fan_out, np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"h{i}"]))
        prev = f"h{i}"
        if i < len(LAYERS) - 2:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    nodes.append(helper.make_node("Softmax", [prev], ["OUTPUT"], axis=1))
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("INPUT", TensorProto.FLOAT, ["batch", LAYERS[0]])],
        [helper.make_tensor_value_info("OUTPUT", TensorProto.FLOAT, ["batch", LAYERS[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="triton-batching-lab")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "model_repository/mlp/1/model.onnx")
    args = parser.parse_args()
    args.out.write_bytes(build().SerializeToString())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
