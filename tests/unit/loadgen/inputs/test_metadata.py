"""A model's inputs and outputs read from its served config."""
from __future__ import annotations

from loadgen.inputs.metadata import TensorInfo, info_from_config
from tests.unit.loadgen.inputs.models import VAR


def test_a_served_config_gives_the_same_model_info():
    config = {"name": "var_dims", "max_batch_size": 8,
              "input": [{"name": "VALUES", "data_type": "TYPE_FP32", "dims": ["-1"]},
                        {"name": "SCALE", "data_type": "TYPE_FP32", "dims": [1], "optional": True}],
              "output": [{"name": "TOTAL", "data_type": "TYPE_FP32", "dims": [1]}]}
    assert info_from_config(config) == VAR
    text = info_from_config({"input": [{"name": "T", "data_type": "TYPE_STRING", "dims": [1]}]}, "m")
    assert text.inputs == (TensorInfo("T", "BYTES", (1,)),) and text.max_batch_size == 0
