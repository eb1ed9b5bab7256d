"""Where a study ran, said in its report: a config's parameters say whether its model is a simulated device. (Which
model files differ from the repository's git commit: tests/contract/experiments/test_environment.py.)"""
from __future__ import annotations

from app.experiments.report.environment import simulated
from app.paths import MODEL_REPOSITORY
from tests.third_party import SOURCE


def test_a_cost_model_is_labelled_simulated_and_a_real_model_is_not():
    gpu, token = (simulated((MODEL_REPOSITORY / m / "config.pbtxt").read_text()) for m in ("gpu_sim", "token_sim"))
    print(gpu)
    assert gpu.startswith("a simulated GPU (a labelled cost model") and "the device times are made up" in gpu
    assert token.startswith("a simulated token generator")
    assert simulated((MODEL_REPOSITORY / "mlp" / "config.pbtxt").read_text()) == ""  # a lab.json, but a real model
    assert simulated((MODEL_REPOSITORY / "stream_acc" / "config.pbtxt").read_text()) == ""
    assert simulated("not { a config") == ""
    assert all(simulated(p.read_text()) == "" for p in SOURCE.glob("*/config.pbtxt"))  # models the lab did not write
