"""Apply on the real server: hot reload, atomic persist, rejection, undo/rollback, remote mode, reload under load."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import tritonclient.http as triton_http

import app.config.apply as apply_module
from app.config import (
    Action, ConfigHistory, ConfigRejectedError, ConfigService, ConfigValidationError, DynamicBatching, HistoryError,
    InstanceGroup, Kind, copy_config, dynamic_batching_of, instance_groups_of, set_dynamic_batching,
    set_instance_group, settings_of,
)
from tests.contract.config.conftest import infer_gpu_sim
from tests.helpers import wait_until


def _with(config, count=None, delay=None):
    if count is not None:
        config = set_instance_group(config, InstanceGroup(count, Kind.CPU))
    if delay is not None:
        db = dynamic_batching_of(config)
        config = set_dynamic_batching(config, DynamicBatching(db.preferred_batch_sizes, delay))
    return config


def test_apply_reloads_persists_and_records(service, triton, restore_model):
    restore_model("gpu_sim")
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    before = path.read_text()
    new = _with(service.current("gpu_sim"), count=2, delay=1500)
    result = service.apply("gpu_sim", new, note="two instances")
    assert path.read_text() == result.new_text
    # only the two values change in the user's text: nothing of Triton's auto-filled config is written into it
    assert result.new_text == before.replace("count: 1", "count: 2").replace(
        "max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: 1500")
    assert result.old_text == before and result.persisted
    assert "-  count: 1" in result.diff and "+  count: 2" in result.diff
    assert "+  max_queue_delay_microseconds: 1500" in result.diff
    assert result.seconds > 0 and "edited config.pbtxt (only the changed fields" in result.message
    assert instance_groups_of(service.live("gpu_sim"))[0].count == 2
    assert [v.action for v in service.history("gpu_sim")] == [Action.BASELINE, Action.APPLY]
    assert service.history("gpu_sim")[-1].id == result.version_id
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_apply_to_a_decoupled_model_smoke_checks_one_generation(service, restore_model):
    restore_model("token_sim")
    new = copy_config(service.current("token_sim"))
    new.parameters["batching"].string_value = "request"  # request-level batching: the dynamic batcher's batch
    new.dynamic_batching.max_queue_delay_microseconds = 1000
    result = service.apply("token_sim", new, note="request-level batching")
    assert result.verified == "READY; a 3-token generation streamed 3 tokens"
    assert dynamic_batching_of(service.live("token_sim")).max_queue_delay_microseconds == 1000


def test_preview_diff_shows_only_the_change(service, restore_model):
    current = service.current("gpu_sim")
    assert service.preview_diff("gpu_sim", current) == ""
    diff = service.preview_diff("gpu_sim", _with(current, delay=700))
    assert [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-  max_queue_delay_microseconds: 500", "+  max_queue_delay_microseconds: 700",
    ]


def _bad_dims(config):
    config = copy_config(config)
    config.input[0].dims[:] = [0]  # Triton refuses at load: dims must be >= 1 or -1
    return config


def _preferred_above_max(config):
    return set_dynamic_batching(config, DynamicBatching((64,), 500))  # Triton refuses while polling


@pytest.mark.parametrize(("make", "reason"), [(_bad_dims, "dimension must be integer >= 1"),
                                              (_preferred_above_max, "preferred size must be <= max batch size")])
def test_rejected_reload_keeps_the_old_config_serving(make, reason, service, triton, client, monkeypatch,
                                                      restore_model):
    restore_model("gpu_sim")
    monkeypatch.setattr(apply_module, "validate", lambda config, caps: None)  # reach the server's own checks
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    file_before, live_before = path.read_bytes(), client.get_model_config("gpu_sim")
    with pytest.raises(ConfigRejectedError, match=r"keeps serving the old one \(checked\)") as info:
        service.apply("gpu_sim", make(service.current("gpu_sim")), confirm_contract=True)
    print(f"\nrejected: {info.value.server_message}")
    assert reason in info.value.server_message
    assert path.read_bytes() == file_before
    assert client.get_model_config("gpu_sim") == live_before
    assert client.is_model_ready("gpu_sim")
    assert np.array_equal(infer_gpu_sim(client, 3.0), np.full((1, 256), 3.0, dtype=np.float32))
    assert Action.APPLY not in [v.action for v in service.history("gpu_sim")]


def test_invalid_config_never_reaches_the_server(service, triton, client):
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    file_before, live_before = path.read_bytes(), client.get_model_config("gpu_sim")
    with pytest.raises(ConfigValidationError, match="KIND_GPU but the server has no GPU"):
        service.apply("gpu_sim", set_instance_group(service.current("gpu_sim"), InstanceGroup(1, Kind.GPU)))
    with pytest.raises(ConfigValidationError, match="set name to 'gpu_sim'"):
        service.apply("gpu_sim", service.current("mlp"))
    assert path.read_bytes() == file_before and client.get_model_config("gpu_sim") == live_before
    assert service.history("gpu_sim") == []


def test_undo_steps_back_and_rollback_brings_a_version_again(service, triton, restore_model):
    restore_model("gpu_sim")
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    original = path.read_bytes()
    first = service.apply("gpu_sim", _with(service.current("gpu_sim"), count=2))
    second = service.apply("gpu_sim", _with(service.current("gpu_sim"), delay=3000))
    undone = service.undo("gpu_sim")
    assert path.read_text() == first.new_text == undone.new_text
    assert dynamic_batching_of(service.live("gpu_sim")).max_queue_delay_microseconds == 500
    service.undo("gpu_sim")
    assert path.read_bytes() == original
    assert settings_of(service.live("gpu_sim")) == settings_of(service.current("gpu_sim"))
    with pytest.raises(HistoryError, match="nothing to undo"):
        service.undo("gpu_sim")
    back = service.rollback("gpu_sim", second.version_id)
    assert path.read_text() == second.new_text and back.old_text == original.decode()
    assert dynamic_batching_of(service.live("gpu_sim")).max_queue_delay_microseconds == 3000


def test_remote_mode_reloads_without_persisting(triton, tmp_path, restore_model):
    restore_model("gpu_sim")
    service = ConfigService(triton.endpoint, None, history=ConfigHistory(tmp_path / "remote"))
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    file_before = path.read_bytes()
    result = service.apply("gpu_sim", _with(service.current("gpu_sim"), count=2))
    assert not result.persisted and "lasts until the server restarts" in result.message
    assert path.read_bytes() == file_before
    assert instance_groups_of(service.live("gpu_sim"))[0].count == 2
    assert "+  count: 2" in result.diff
    service.undo("gpu_sim")
    assert instance_groups_of(service.live("gpu_sim"))[0].count == 1


def test_serving_goes_on_through_reloads_under_sustained_load(service, triton, restore_model):
    """Eight clients send without pause while ten Applies land: no request fails, every Apply serves its config,
    and answers keep coming after the last. (How long serving stalls inside an Apply: bench/apply_stall.)"""
    restore_model("gpu_sim")
    threads_n, reloads_n = 8, 10
    stop = threading.Event()
    answered: list[float] = []  # when each successful request ended
    failures: list[str] = []

    def worker() -> None:
        client = triton_http.InferenceServerClient(triton.endpoint.host_port)
        while not stop.is_set():
            try:
                infer_gpu_sim(client)
            except Exception as exc:  # noqa: BLE001 - every failure is counted and shown
                failures.append(repr(exc))
            else:
                answered.append(time.monotonic())

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads_n)]
    for thread in workers:
        thread.start()
    try:
        wait_until(lambda: len(answered) >= threads_n, 60, "answers before the first Apply")
        base = service.current("gpu_sim")
        for i in range(reloads_n):
            count, delay = 1 + (i + 1) % 3, 100 * (i + 1)
            service.apply("gpu_sim", _with(base, count=count, delay=delay))
            live = service.live("gpu_sim")
            assert (instance_groups_of(live)[0].count, dynamic_batching_of(live).max_queue_delay_microseconds) == (
                count, delay), f"Apply {i + 1} did not land"
        last = time.monotonic()
        wait_until(lambda: sum(t > last for t in answered) >= threads_n, 60, "answers after the last Apply")
    finally:
        stop.set()
        for thread in workers:
            thread.join(30)
    print(f"\nreload under load: {threads_n} threads, {reloads_n} reloads, {len(answered)} answered, "
          f"{len(failures)} failed")
    assert failures == [], failures[:3]
    assert len(service.history("gpu_sim")) == reloads_n + 1


def test_a_named_config_is_read_and_written_instead_of_config_pbtxt(triton, history, restore_model):
    """Like `tritonserver --model-config-name=NAME`: configs/NAME.pbtxt wins where it exists."""
    from app.config import set_settings, settings_of
    from app.config.knobs import apply_knobs

    restore_model("gpu_sim")
    folder = triton.repo / "gpu_sim"
    named = folder / "configs" / "lab_test.pbtxt"
    original = (folder / "config.pbtxt").read_text()
    named.write_text(original)
    default_before = (folder / "config.pbtxt").read_bytes()
    try:
        service = ConfigService(triton.endpoint, triton.repo, history=history, config_name="lab_test")
        assert service.config_path("gpu_sim") == named
        assert service.config_path("mlp") == triton.repo / "mlp" / "config.pbtxt"  # no named file: the default
        current = service.current("gpu_sim")
        new = set_settings(current, apply_knobs(settings_of(current), {"max_queue_delay_microseconds": 1000}))
        service.apply("gpu_sim", new)
        assert "max_queue_delay_microseconds: 1000" in named.read_text()
        assert named.read_text() == original.replace("max_queue_delay_microseconds: 500",
                                                     "max_queue_delay_microseconds: 1000")
        assert (folder / "config.pbtxt").read_bytes() == default_before
    finally:
        named.unlink()


def test_an_apply_built_from_an_older_config_is_refused_with_nothing_lost(service, triton, restore_model):
    from app.config import StaleConfigError, config_version  # noqa: PLC0415

    restore_model("gpu_sim")
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    seen = path.read_text()
    first = _with(service.current("gpu_sim"), delay=500 + 250)  # "delay -> 750" prepared from `seen`...
    second = _with(service.current("gpu_sim"), count=3)  # ..."instances -> 3" prepared from the same text
    service.apply("gpu_sim", first, base=config_version(seen))
    after_first = path.read_bytes()
    with pytest.raises(StaleConfigError, match="another change to 'gpu_sim' landed"):
        service.apply("gpu_sim", second, base=config_version(seen))  # would silently undo the first
    assert path.read_bytes() == after_first
    assert dynamic_batching_of(service.live("gpu_sim")).max_queue_delay_microseconds == 750
    assert instance_groups_of(service.live("gpu_sim"))[0].count == 1


def test_a_load_that_does_not_answer_in_time_restores_the_old_config(triton, history, restore_model):
    from app.config import ConfigTimeoutError  # noqa: PLC0415

    restore_model("gpu_sim")
    service = ConfigService(triton.endpoint, triton.repo, history=history, load_timeout_s=0.05)
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    before = path.read_bytes()
    with pytest.raises(ConfigTimeoutError) as info:
        service.apply("gpu_sim", _with(service.current("gpu_sim"), count=2))
    print(f"\n{info.value}")
    assert "did not answer within 0.05 s" in str(info.value) and "restored and serves" in str(info.value)
    assert path.read_bytes() == before and Action.APPLY not in [v.action for v in service.history("gpu_sim")]
    client = triton_http.InferenceServerClient(triton.endpoint.host_port)
    wait_until(lambda: client.is_model_ready("gpu_sim") and instance_groups_of(service.live("gpu_sim"))[0].count == 1,
               60, "the old config to serve again")
    assert np.array_equal(infer_gpu_sim(client, 2.0), np.full((1, 256), 2.0, dtype=np.float32))
