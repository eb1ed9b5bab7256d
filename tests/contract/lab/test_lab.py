"""The Lab through its verbs on real servers: no TRITON_URL starts the embedded server, restart keeps the ports,
TRITON_URL starts nothing, traffic is marked, a failed create leaves nothing running; and the FakeLab the unit
tier draws every page on does what the real Lab does on the same sequence of verbs."""
from __future__ import annotations

import re

import pytest

from app.config import Action, ConfigError, ConfigRejectedError, DynamicBatching, copy_config
from app.config.edits import set_dynamic_batching
from app.config.read import dynamic_batching_of
from app.lab.root import Lab
from app.paths import MODEL_REPOSITORY
from app.server.embedded import group_alive
from loadgen.spec import LoadSpec
from tests.fakes.fake_lab import FakeLab
from tests.helpers import copy_of_the_lab_repository, embedded_lab_serving, followed_after_restart, wait_until


def test_embedded_lab_starts_restarts_and_closes(tmp_path):
    with embedded_lab_serving(copy_of_the_lab_repository(tmp_path), tmp_path / "state") as lab:
        assert lab.server_facts().embedded and lab.server_facts().endpoint.http_url.startswith("http://127.0.0.1:")
        status = lab.status()
        assert status.ready and {m.name for m in status.models} == {"gpu_sim", "mlp", "stream_acc", "token_sim"}
        before = lab.server_facts().endpoint
        pgid = _pid(lab)
        wait_until(lambda: len(lab.server_view("gpu_sim", window_s=60).timeline) >= 2, 30, "two polls")
        seen = lab.server_view("gpu_sim", window_s=60).timeline
        lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=1, duration_s=120.0))
        lab.restart(resume_traffic=True)
        followed_after_restart(lab, before)
        assert lab.traffic().running and lab.traffic().spec.concurrency == 1, "the traffic was not resumed"
        lab.stop_traffic()
        start, stop, restart, resumed, _ = lab.markers()
        assert [start.kind, stop.text, resumed.kind] == ["traffic", "traffic stopped for a server restart", "traffic"]
        assert restart.kind == "restart" and restart.band and restart.ok and restart.end > restart.t
        assert not group_alive(pgid), "the old server's processes outlived the restart"
        assert _pid(lab) != pgid
        pgid = _pid(lab)
        after = wait_until(lambda: [r for r in lab.server_view("gpu_sim", window_s=60).timeline
                                    if r["t"] > restart.end and r["infer_rps"] is not None], 30, "a poll after it")
        kept = lab.server_view("gpu_sim", window_s=60).timeline
        assert [r["t"] for r in seen] == [r["t"] for r in kept[:len(seen)]], "the metrics history did not survive"
        assert after[-1]["up"]
    assert not group_alive(pgid), "closing the lab left its server running"


def _pid(lab) -> int:
    """Return the process id the embedded server's description names."""
    return int(re.search(r"process (\d+)", lab.server_facts().description).group(1))


def test_remote_lab_starts_nothing(triton, tmp_path, monkeypatch):
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    lab = Lab.create({"TRITON_URL": triton.url, "TRITON_METRICS_URL": triton.endpoint.metrics_url,
                      "TRITON_GRPC_URL": triton.endpoint.grpc_url, "TRITON_CONTROL_KEY": triton.endpoint.control_key})
    try:
        assert not lab.server_facts().embedded and lab.server_facts().backend == "remote" and lab.status().version == "2.51.0"
        assert lab.server_facts().repository is None  # nothing to persist to: applies reload only
    finally:
        lab.close()


def test_traffic_start_update_and_stop_go_through_the_lab_and_are_marked(triton, tmp_path, monkeypatch):
    from loadgen.spec import LoadSpec  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    lab = Lab.create({"TRITON_URL": triton.url, "TRITON_METRICS_URL": triton.endpoint.metrics_url,
                      "TRITON_GRPC_URL": triton.endpoint.grpc_url, "TRITON_CONTROL_KEY": triton.endpoint.control_key})
    try:
        lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=30.0))
        lab.update_traffic(concurrency=3)
        assert lab.traffic_snapshot(window_s=0).spec.concurrency == 3
        lab.stop_traffic()
        assert not lab.traffic().running
        texts = [m.text for m in lab.markers("gpu_sim")]
        assert texts[0].startswith("traffic start: closed loop, concurrency 2")
        assert texts[1:] == ["traffic update: concurrency → 3", "traffic stop"]
        lab.stop_traffic()  # nothing runs: nothing more is marked
        assert len(lab.markers("gpu_sim")) == 3
    finally:
        lab.close()


def test_a_create_that_fails_after_the_server_started_leaves_nothing_running(tmp_path, monkeypatch):
    """A retry after a failed start must not find the first attempt's server and generator still running."""
    import shutil  # noqa: PLC0415

    import app.lab.root as lab_module  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    repo = tmp_path / "repo"
    shutil.copytree(MODEL_REPOSITORY / "gpu_sim", repo / "gpu_sim")
    made = {}

    class Recorded(lab_module.LoadController):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made["load"] = self

    real_start = lab_module.EmbeddedServer.start

    def start(server):
        made["server"] = server
        return real_start(server)

    def broken(_keeper):
        raise OSError("the history store cannot be read")

    monkeypatch.setattr(lab_module, "LoadController", Recorded)
    monkeypatch.setattr(lab_module.EmbeddedServer, "start", start)
    monkeypatch.setattr(lab_module.TimelineKeeper, "restore", broken)
    with pytest.raises(OSError, match="history store"):
        Lab.create({"TBL_MODEL_REPOSITORY": str(repo)})
    server, load = made["server"], made["load"]
    assert not server.running(), "the server of the failed start is still running"
    assert load.worker.pid is None, "the generator's worker of the failed start is still running"


# --- the FakeLab against the real Lab -------------------------------------------------------------------------------

def _sequence(lab, before_refusal=lambda: None) -> list[dict]:
    """Apply a delay, undo it, have a load refused; return what each step left (the served delay, config.pbtxt,
    the marker, the history) in the terms both labs share."""
    def seen(step: str, outcome) -> dict:
        marker = lab.markers("gpu_sim")[-1]
        return {"step": step, "outcome": type(outcome).__name__,
                "delay": dynamic_batching_of(lab.served_config("gpu_sim")).max_queue_delay_microseconds,
                "file": lab.file_text("gpu_sim"), "marker": (marker.kind, marker.text, marker.ok, marker.band),
                "band_ended": marker.end is not None and marker.end >= marker.t,
                "history": [v.action for v in lab.versions("gpu_sim")]}

    delayed = set_dynamic_batching(lab.served_config("gpu_sim"), DynamicBatching((4, 8), 1500))
    applied = lab.apply("gpu_sim", delayed, "delay 1500 µs")
    steps = [{**seen("apply", applied), "persisted": applied.persisted, "diff": applied.diff}]
    steps.append(seen("undo", lab.undo("gpu_sim")))
    foreign = copy_config(lab.served_config("gpu_sim"))
    foreign.backend = "tensorrt"  # a backend the CPU server lacks: the server refuses the load
    before_refusal()
    with pytest.raises(ConfigError) as refused:
        lab.apply("gpu_sim", foreign, "tensorrt", confirm_contract=True)
    steps.append({**seen("refused", refused.value), "serving": "keeps serving the old one (checked)" in str(
        refused.value)})
    return steps


def test_the_fake_lab_does_what_the_real_lab_does_on_the_same_verbs(gpu_sim_lab, tmp_path):
    real = _sequence(gpu_sim_lab)
    fake = FakeLab(tmp_path / "fake")
    try:
        steps = _sequence(fake, lambda: fake.refuse_loads("gpu_sim", "unable to find backend 'tensorrt'"))
    finally:
        fake.close()
    assert steps == real, "\n".join(f"fake {a}\nreal {b}" for a, b in zip(steps, real) if a != b)
    pristine = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()
    assert [(s["step"], s["outcome"]) for s in real] == [("apply", "ApplyResult"), ("undo", "ApplyResult"),
                                                         ("refused", ConfigRejectedError.__name__)]
    assert real[0]["delay"] == 1500 and real[0]["file"] == pristine.replace(
        "max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: 1500") and real[0]["persisted"]
    assert real[0]["marker"] == ("apply", "delay 1500 µs", True, True) and real[0]["band_ended"]
    assert real[1]["marker"][:3] == ("undo", "undo", True)
    assert [s["delay"] for s in real[1:]] == [500, 500] and all(s["file"] == pristine for s in real[1:])
    assert real[2]["marker"] == ("apply", "tensorrt — not applied", False, True) and real[2]["serving"]
    assert real[2]["history"] == [Action.BASELINE, Action.APPLY, Action.UNDO]
