"""The Docker server backend on a real daemon: a Triton container through the Docker SDK, driven like the embedded
server; what a missing image, a server that dies at start, a model that cannot load and a taken port do."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest

from app.config.edits import set_dynamic_batching
from app.config.read import dynamic_batching_of
from app.config.settings import DynamicBatching
from app.server.docker_server import LABEL, DockerOptions, DockerServer, DockerUnavailable
from app.server.start_errors import ServerStartError
from app.server.status import fetch_status, with_log_reasons
from loadgen.spec import LoadSpec
from tests.contract.server.squatter import Squatter
from tests.helpers import copy_of_the_lab_repository, followed_after_restart, unavailable, wait_until


@pytest.fixture(scope="module")
def client():
    """The Docker daemon `scripts/lab.sh test` starts; with CI=true a missing daemon fails the tests."""
    try:
        import docker  # noqa: PLC0415

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # noqa: BLE001
        unavailable(f"no Docker daemon answers ({exc}); scripts/lab.sh test starts Debian's dockerd")
    return client


@pytest.fixture
def repo(tmp_path):
    return copy_of_the_lab_repository(tmp_path, "model_repository")


def _ours(client) -> list:
    return client.containers.list(all=True, filters={"label": f"{LABEL}={os.getpid()}"})


def test_a_lab_on_a_triton_container_applies_restarts_and_removes_it(client, repo, tmp_path, monkeypatch):
    from app.lab.root import Lab  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    lab = Lab.create({"TBL_SERVER": "docker", "TBL_MODEL_REPOSITORY": str(repo)})
    try:
        assert lab.server_facts().backend == "docker" and lab.server_facts().embedded
        (container,) = _ours(client)
        assert container.attrs["HostConfig"]["NetworkMode"] == "host" and container.labels[LABEL] == str(os.getpid())
        assert f"Docker container {container.name}" in lab.server_facts().description
        assert lab.server_facts().endpoint.http_url.startswith("http://127.0.0.1:")
        status = lab.status()
        assert status.ready and {m.name for m in status.models} == {"gpu_sim", "mlp", "stream_acc", "token_sim"}
        assert "Started HTTPService" in lab.server_log(200)
        # Applied like on the embedded server: validated, hot-reloaded, smoke-checked, persisted.
        new = set_dynamic_batching(lab.served_config("gpu_sim"), DynamicBatching((4, 8), 1500))
        result = lab.apply("gpu_sim", new, "a delay of 1500 µs")
        assert result.verified.startswith("READY") and "1500" in (repo / "gpu_sim" / "config.pbtxt").read_text()
        assert dynamic_batching_of(lab.served_config("gpu_sim")).max_queue_delay_microseconds == 1500
        lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=60.0))
        wait_until(lambda: (lab.traffic_snapshot(0).summary.get("all") or {}).get("ok", 0) >= 20, 60, "answers")
        before = lab.server_facts().endpoint
        lab.restart(resume_traffic=True)
        followed_after_restart(lab, before)
        (again,) = _ours(client)  # the old container was removed, a new one serves
        assert again.id != container.id and f"Docker container {again.name}" in lab.server_facts().description
        assert lab.traffic().running
        lab.stop_traffic()
    finally:
        lab.close()
    assert _ours(client) == [], "closing the lab left its container behind"


def test_a_missing_image_that_cannot_be_pulled_is_a_clear_error(client, repo):
    server = DockerServer(DockerOptions(image="127.0.0.1:9/tbl-absent:1", model_repository=repo))
    with pytest.raises(DockerUnavailable, match="could not be pulled"):
        server.start()
    server = DockerServer(DockerOptions(image="tbl-absent:1", model_repository=repo, pull=False))
    with pytest.raises(DockerUnavailable, match="not on this machine"):
        server.start()
    assert _ours(client) == []


def test_a_server_that_dies_at_start_shows_its_log_and_leaves_no_container(client, repo):
    server = DockerServer(DockerOptions(model_repository=repo, models=("gpu_sim",), ready_timeout_s=60,
                                        extra_args=("--no-such-flag=1",)))
    with pytest.raises(ServerStartError) as failure:
        server.start()
    print(failure.value)
    assert "container stopped" in str(failure.value) and "--trace-rate" in str(failure.value)  # its usage text
    assert _ours(client) == []


def test_a_model_that_cannot_load_is_listed_with_its_reason_and_the_container_serves(client, repo):
    (repo / "gpu_sim" / "config.pbtxt").write_text("name: \"gpu_sim\"\nthis is not a config\n")
    server = DockerServer(DockerOptions(model_repository=repo, models=("gpu_sim", "mlp"), ready_timeout_s=60))
    try:
        endpoint = server.start()
        states = {m.name: m for m in with_log_reasons(fetch_status(endpoint), server.log_tail(400)).models}
        assert states["mlp"].state == "READY"
        assert not states["gpu_sim"].state and "failed to read text proto" in states["gpu_sim"].reason, states
    finally:
        server.stop()
    assert _ours(client) == []


def test_a_port_taken_after_it_was_chosen_is_not_mistaken_for_the_container(client, repo, monkeypatch):
    """On the host network the container binds the ports itself, seconds after they were chosen free: another
    process answering on its metrics port is waited past, and the container that could not bind it is replaced by
    one on other free ports (2026-12-05: the dashboard's container test applied to another lab's server)."""
    import app.server.embedded as embedded  # noqa: PLC0415 - where the ports are chosen

    squatter = Squatter()
    calls = squatter.first_choice_takes(embedded, 2, monkeypatch)
    server = DockerServer(DockerOptions(model_repository=repo, models=("gpu_sim",), ready_timeout_s=60))
    try:
        endpoint = server.start()
        assert len(calls) == 2, calls  # the first container exited on the taken port; a second one serves
        assert squatter.port not in {urlsplit(endpoint.http_url).port, urlsplit(endpoint.metrics_url).port}, endpoint
        assert fetch_status(endpoint).models[0].name == "gpu_sim" and server.running()
        assert [c.id for c in _ours(client)] == [server.container.id], "the first container was not removed"
    finally:
        server.stop()
        squatter.close()
    assert _ours(client) == []
