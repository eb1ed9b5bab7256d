"""One Apply across two real replicas: both updated in turn, one marker each; a replica that fails rolls the
first one back."""
from __future__ import annotations

import pytest
import tritonclient.http as http

from app.config.edits import set_dynamic_batching
from app.config.fleet import FleetApplyError
from app.config.read import dynamic_batching_of
from app.config.settings import DynamicBatching
from app.server.embedded import EmbeddedServer, ServerOptions
from tests.helpers import copy_of_the_lab_repository


@pytest.fixture
def replica_b(tmp_path):
    repo = copy_of_the_lab_repository(tmp_path)
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None,
                                          metrics_port=None, models=("gpu_sim",), log_dir=tmp_path))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fleet_lab(triton, replica_b, restore_model, tmp_path, monkeypatch):
    from app.lab.root import Lab  # noqa: PLC0415

    restore_model("gpu_sim")
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    e = replica_b.endpoint
    (tmp_path / "fleet.yaml").write_text(f"replicas:\n  - name: b\n    http: {e.http_url}\n    grpc: {e.grpc_url}\n"
                                         f"    metrics: {e.metrics_url}\n")
    # one control key for both: one process started them
    lab = Lab.create(triton.lab_env(TBL_FLEET_FILE=str(tmp_path / "fleet.yaml")))
    yield lab
    lab.close()


def _delay(endpoint) -> int:
    """The live config's delay, as the replica itself serves it."""
    config = http.InferenceServerClient(endpoint.host_port).get_model_config("gpu_sim")
    return int(config["dynamic_batching"].get("max_queue_delay_microseconds", 0))


def test_one_apply_updates_every_replica_then_a_failing_one_rolls_the_first_back(fleet_lab, triton, replica_b):
    base = fleet_lab.served_config("gpu_sim")
    result = fleet_lab.apply("gpu_sim", set_dynamic_batching(base, DynamicBatching((4, 8), 1500)), "delay 1500 µs")
    assert result.verified.startswith("READY") and result.message.endswith("; then on replica b, each checked")
    assert _delay(triton.endpoint) == _delay(replica_b.endpoint) == 1500
    bands = [m for m in fleet_lab.markers("gpu_sim") if m.kind == "apply"]
    assert [(m.text, m.ok) for m in bands] == [("delay 1500 µs — replica this lab's server", True),
                                              ("delay 1500 µs — replica b", True)]

    # Replica b's model files differ: its model cannot initialize any more, so its next reload fails.
    (replica_b.options.model_repository / "gpu_sim" / "1" / "model.py").write_text(
        "class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError('replica b is broken')\n")
    second = set_dynamic_batching(fleet_lab.served_config("gpu_sim"), DynamicBatching((4, 8), 2500))
    with pytest.raises(FleetApplyError, match="(?s)replica b could not take the change.*rolled back this lab.s server"):
        fleet_lab.apply("gpu_sim", second, "delay 2500 µs")
    assert _delay(triton.endpoint) == 1500, "the first replica kept the change after the second failed"
    assert dynamic_batching_of(fleet_lab.served_config("gpu_sim")).max_queue_delay_microseconds == 1500
    last = [(m.text, m.ok) for m in fleet_lab.markers("gpu_sim") if m.kind == "apply"][2:]
    assert last == [("delay 2500 µs — replica this lab's server", True),
                    ("delay 2500 µs — replica b: not applied", False),
                    ("fleet rollback — replica this lab's server", True)]

    replica_b.stop()  # a replica that does not answer: nothing changes anywhere
    with pytest.raises(FleetApplyError, match="replica b does not answer.*nothing was changed"):
        fleet_lab.apply("gpu_sim", second, "delay 2500 µs")
    assert _delay(triton.endpoint) == 1500
