"""The Docker server backend: a real Triton container through the Docker SDK, driven like the embedded server."""
from __future__ import annotations

import os
import tarfile
import io
from urllib.parse import urlsplit

import pytest

from app.config.edits import set_dynamic_batching
from app.config.read import dynamic_batching_of
from app.config.settings import DynamicBatching
from app.paths import MODEL_REPOSITORY
from app.server.docker_server import (LABEL, LOCAL_IMAGE, DockerOptions, DockerServer, DockerUnavailable,
                                      device_requests, local_image_tar, run_kwargs)
from app.server.errors import ServerStartError
from app.server.status import fetch_status, with_log_reasons
from loadgen.spec import LoadSpec
from tests.helpers import copy_of_the_lab_repository, unavailable, wait_until
from tests.server.squatter import Squatter


# --- what the backend asks the daemon for (pure) ------------------------------------------------------------
def test_gpus_become_device_requests():
    assert device_requests("") == []
    (every,) = device_requests("all")
    assert every.count == -1 and every.capabilities == [["gpu"]]
    assert device_requests("2")[0].count == 2
    assert device_requests("0, 3")[0].device_ids == ["0", "3"]


@pytest.mark.parametrize("bad, message", [
    ({"gpus": "first"}, "TBL_DOCKER_GPUS"), ({"network": "bridge"}, "host or ports"),
    ({"name": "a b"}, "container name"), ({"host": "0.0.0.0"}, "127.0.0.1 only"),
])
def test_bad_options_are_refused_with_a_reason(bad, message):
    with pytest.raises(ValueError, match=message):
        DockerOptions(**bad)


def test_an_ngc_container_gets_the_repository_at_models_gpus_and_ports_on_loopback_only():
    opts = DockerOptions(image="nvcr.io/nvidia/tritonserver:24.10-py3", network="ports", gpus="all",
                         config_name="gpu", models=("gpu_sim",))
    kw = run_kwargs(opts, (18000, 18001, 18002), "tbl-triton-18000")
    assert kw["command"][0] == "tritonserver" and "--model-repository=/models" in kw["command"]
    assert "--model-config-name=gpu" in kw["command"] and "--load-model=gpu_sim" in kw["command"]
    assert kw["volumes"] == {str(MODEL_REPOSITORY.resolve()): {"bind": "/models", "mode": "ro"}}
    assert kw["ports"] == {"8000/tcp": ("127.0.0.1", 18000), "8001/tcp": ("127.0.0.1", 18001),
                           "8002/tcp": ("127.0.0.1", 18002)}
    assert "network_mode" not in kw and kw["device_requests"][0].count == -1
    assert kw["labels"] == {LABEL: str(os.getpid())}


def test_the_local_image_runs_the_wheel_server_on_the_host_network_bound_to_loopback():
    kw = run_kwargs(DockerOptions(), (18000, 18001, 18002), "tbl-triton-18000")
    assert kw["image"] == LOCAL_IMAGE and kw["network_mode"] == "host" and "device_requests" not in kw
    assert kw["command"][0].endswith("/tritonserver")
    assert {"--http-address=127.0.0.1", "--http-port=18000", "--grpc-address=127.0.0.1",
            "--metrics-address=127.0.0.1", "--model-control-mode=explicit"} <= set(kw["command"])
    assert all(v["mode"] == "ro" and v["bind"] == k for k, v in kw["volumes"].items()), kw["volumes"]
    assert str(MODEL_REPOSITORY.parent.resolve()) in kw["volumes"]  # the checkout, holding the repository


@pytest.mark.parametrize("image", ["local", "nvcr.io/nvidia/tritonserver:24.10-py3"])
def test_the_container_is_locked_by_the_process_key_and_gets_no_secret(image, monkeypatch):
    from app.server.control_key import lock_flags, process_key  # noqa: PLC0415

    monkeypatch.setenv("TBL_OPERATOR_TOKEN", "operator-secret")
    monkeypatch.setenv("TRITON_CONTROL_KEY", "control-secret")
    kw = run_kwargs(DockerOptions(image=image), (18000, 18001, 18002), "tbl-triton-18000")
    assert set(lock_flags(process_key())) <= set(kw["command"]), kw["command"]
    environment = kw.get("environment", {})  # an NGC image: the image's own environment, nothing of the lab's
    assert not {"operator-secret", "control-secret"} & set(environment.values()), environment
    assert set(environment) <= {"PATH", "LD_LIBRARY_PATH", "HOME"}, environment


def test_a_numpy_the_stub_cannot_serve_stops_the_lab_image_before_docker_is_asked(monkeypatch):
    import app.server.binary as binary  # noqa: PLC0415

    monkeypatch.setattr(binary, "_installed", lambda package: "2.1.3")  # as after `pip install numpy==2.1.3`

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"Docker was asked for {name}")

    server = DockerServer(DockerOptions(http_port=None, grpc_port=None, metrics_port=None), client=Untouchable())
    with pytest.raises(ServerStartError) as failure:
        server.start()
    assert "numpy 2.1.3" in str(failure.value) and 'pip install "numpy<2"' in str(failure.value), failure.value
    assert server.container is None and not server.running()


def test_a_container_whose_python_backend_aborted_is_started_once_more(monkeypatch):
    """The abort of Triton's Python backend on a starved host (seen in a container on this 2-core machine) ends the
    first container; a second one is started, and only a second such end is raised."""
    import docker  # noqa: PLC0415

    import app.server.docker_server as docker_server  # noqa: PLC0415

    abort = "the Triton container stopped.\nterminate called after throwing an instance of " \
            "'boost::interprocess::lock_exception'"
    events: list[str] = []

    class Container:
        def __init__(self, name):
            self.name, self.status = name, "running"

        def reload(self):
            pass

        def stop(self, timeout):
            events.append(f"stop {self.name}")

        def remove(self, force):
            self.status = "removed"

    class Client:
        class images:  # noqa: N801 - the docker client's attribute
            get = staticmethod(lambda image: object())

        class containers:  # noqa: N801
            @staticmethod
            def get(name):
                raise docker.errors.NotFound(name)

            @staticmethod
            def run(**kwargs):
                events.append(f"run {kwargs['name']}")
                return Container(kwargs["name"])

    for outcomes, raised in (([abort], False), ([abort, abort], True)):
        events.clear()
        left = list(outcomes)

        def ready(*args, left=left, **kwargs):
            if left:
                raise ServerStartError(left.pop(0))

        monkeypatch.setattr(docker_server, "wait_ready", ready)
        server = DockerServer(DockerOptions(http_port=None, grpc_port=None, metrics_port=None), client=Client())
        if raised:
            with pytest.raises(ServerStartError, match="lock_exception"):
                server.start()
        else:
            server.start()
        runs = [e for e in events if e.startswith("run")]
        assert len(runs) == 2 and len([e for e in events if e.startswith("stop")]) == len(outcomes), events
        assert server.running() != raised, events
        server.stop()


def test_the_local_image_is_an_empty_root_with_a_writable_tmp():
    with tarfile.open(fileobj=io.BytesIO(local_image_tar())) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {"tmp", "etc", "models"} and all(m.isdir() for m in members.values())
    assert members["tmp"].mode == 0o1777


# --- a real daemon ---------------------------------------------------------------------------------------------
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
        container = lab.server.container
        assert container.attrs["HostConfig"]["NetworkMode"] == "host" and container.labels[LABEL] == str(os.getpid())
        assert lab.server_facts().endpoint.http_url.startswith("http://127.0.0.1:")
        status = lab.status()
        assert status.ready and {m.name for m in status.models} == {"gpu_sim", "mlp", "stream_acc", "token_sim"}
        assert "Started HTTPService" in lab.server_log(200)
        # Applied like on the embedded server: validated, hot-reloaded, smoke-checked, persisted.
        new = set_dynamic_batching(lab.served_config("gpu_sim"), DynamicBatching((4, 8), 1500))
        result = lab.apply("gpu_sim", new, "a delay of 1500 µs")
        assert result.verified.startswith("READY") and "1500" in (repo / "gpu_sim" / "config.pbtxt").read_text()
        assert dynamic_batching_of(lab.config.live("gpu_sim")).max_queue_delay_microseconds == 1500
        lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=60.0))
        wait_until(lambda: (lab.traffic_snapshot(0).summary.get("all") or {}).get("ok", 0) >= 20, 60, "answers")
        before, old_id = lab.server_facts().endpoint, container.id
        lab.restart(resume_traffic=True)
        assert lab.server_facts().endpoint == before and lab.status().ready and lab.server.container.id != old_id
        assert [c.id for c in _ours(client)] == [lab.server.container.id], "the old container was not removed"
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


def test_the_dashboard_shows_the_container_and_applies_through_it(client, repo, tmp_path, monkeypatch):
    from app.lab import owner as lab_owner  # noqa: PLC0415
    from app.ui.state import get_lab  # noqa: PLC0415 - the process's one Lab, as the pages get it
    from tests.ui.apptest import metric, ok, open_page, texts, widget  # noqa: PLC0415

    for name in ("TRITON_URL", "TRITON_GRPC_URL", "TRITON_METRICS_URL", "TRITON_MODEL_REPOSITORY", "TBL_VIEWER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TBL_SERVER", "docker")
    monkeypatch.setenv("TBL_MODEL_REPOSITORY", str(repo))
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    lab_owner.close()  # a Lab an earlier test left (none: nothing to do); the pages build the docker one
    try:
        overview = open_page("lab_pages/overview.py")
        assert metric(overview, "Backend") == "docker" and metric(overview, "Server") == "ready"
        lab = get_lab()
        assert any(f"Docker container {lab.server.container.name}" in m.value for m in overview.markdown)
        page = open_page("lab_pages/dynamic_batching.py")
        widget(page.select_slider, "max_queue_delay_microseconds").set_value(2000).run()
        ok(page.button(key="dynamic:apply").click().run())
        assert any("reloaded gpu_sim" in t for t in texts(page.success))
        assert "max_queue_delay_microseconds: 2000" in (repo / "gpu_sim" / "config.pbtxt").read_text()
    finally:
        lab_owner.close()
    assert _ours(client) == []
