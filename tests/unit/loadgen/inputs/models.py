"""Model descriptions (as the server's config gives them) for the inputs' tests."""
from loadgen.inputs.metadata import ModelInfo, TensorInfo

VAR = ModelInfo("var_dims", (TensorInfo("VALUES", "FP32", (-1,)), TensorInfo("SCALE", "FP32", (1,), optional=True)),
                (TensorInfo("TOTAL", "FP32", (1,)),), 8)
IMAGE = ModelInfo("vision", (TensorInfo("IMAGE", "UINT8", (3, -1, -1)), TensorInfo("MASK", "BOOL", (-1,))), (), 4)
TWO = ModelInfo("two_inputs", (TensorInfo("A", "FP32", (4,)), TensorInfo("B", "INT32", (2,))), (), 0)
TEXT = ModelInfo("text_len", (TensorInfo("TEXT", "BYTES", (1,)),), (), 16)
