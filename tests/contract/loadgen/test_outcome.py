"""The server's refusals classified, and the priority and timeout each request carries honoured by the real server:
gpu_sim with two priority levels, level 1 holding at most one queued request (the rest refused: queue_full), level 2
rejecting a request queued past its own timeout (queue_timeout). Interactive requests (priority 1) can only be
refused for the full queue and batch ones (priority 2, a 1 ms timeout of their own) only for the timeout — unless
the priority or the timeout did not reach the server. (That priorities keep the interactive p99 under overload is a
measurement: the mixed-traffic scenario.)"""
from __future__ import annotations

from tritonclient.grpc import model_config_pb2 as mc

from loadgen.outcome import Outcome
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.contract.loadgen.serverkit import reload_with, run_load


def two_levels(config: mc.ModelConfig) -> None:
    """A slow simulated device (~25 ms a batch, light on the CPU) behind two priority levels with their own limits."""
    config.parameters["compute_us_batch1"].string_value = "20000"
    batching = config.dynamic_batching
    batching.priority_levels = 2
    batching.default_priority_level = 2
    batching.priority_queue_policy[1].max_queue_size = 1
    level2 = batching.priority_queue_policy[2]
    level2.timeout_action = mc.ModelQueuePolicy.REJECT
    level2.allow_timeout_override = True
    level2.default_timeout_microseconds = 10_000_000  # Triton 2.51 applies a request's own timeout only with one


def test_refusals_are_rejections_of_their_kind_per_priority_level(triton, restore_model):
    restore_model("gpu_sim")
    reload_with(triton, "gpu_sim", two_levels)
    # Poisson arrivals at 100/s against ~25 ms batches: most arrive while a batch runs and wait in the queue.
    spec = LoadSpec(mode=Mode.OPEN, rate=100.0, duration_s=None, max_requests=240, seed=4, stop_when_all_fail_s=None,
                    classes=(TrafficClass("interactive", share=0.5, priority=1),
                             TrafficClass("batch", share=0.5, priority=2, server_timeout_us=1000)))
    records, summary, _ = run_load(triton, spec)
    interactive, batch = summary["interactive"], summary["batch"]
    assert interactive["errors_by_kind"].keys() == {"queue_full"} and interactive["rejected"] > 0, interactive
    assert batch["errors_by_kind"].keys() == {"queue_timeout"} and batch["rejected"] > 0, batch
    assert interactive["ok"] > 0 and summary["all"]["errors"] == 0  # shed requests are not generic errors
    assert {r.outcome for r in records} == {Outcome.OK, Outcome.REJECTED}
    assert {r.priority for r in records if r.cls == "interactive"} == {1}
