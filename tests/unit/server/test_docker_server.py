"""The Docker server backend without a daemon: what it asks the daemon for, what it refuses, its one more start
after a Python backend abort, the local image; the Overview of a lab on a container (tests/contract/server/
test_docker_server.py runs real containers)."""
from __future__ import annotations

import io
import os
import tarfile

import pytest

from app.paths import MODEL_REPOSITORY
from app.server.docker_server import (LABEL, LOCAL_IMAGE, DockerOptions, DockerServer, device_requests,
                                      local_image_tar, run_kwargs)
from app.server.start_errors import ServerStartError


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


def test_the_overview_of_a_lab_on_a_container_names_it_and_shows_its_log(on_fake, monkeypatch):
    from dataclasses import replace  # noqa: PLC0415

    from tests.unit.ui.apptest import metric, open_page  # noqa: PLC0415

    facts = replace(on_fake.server_facts(), backend="docker",
                    description="Docker container tbl-triton-18000 (0a1b2c3d) from lab CPU image, host network")
    monkeypatch.setattr(on_fake, "server_facts", lambda: facts)
    monkeypatch.setattr(on_fake, "server_log", lambda lines=60: "I1206 Started HTTPService at 127.0.0.1:18000")
    overview = open_page("lab_pages/overview.py")
    assert metric(overview, "Backend") == "docker" and metric(overview, "Server") == "ready"
    assert any("Docker container tbl-triton-18000" in m.value for m in overview.markdown)
    assert [e.label for e in overview.expander if e.label.startswith("Container log")], "no container log"


@pytest.mark.parametrize("asked, summaries", [("", False), ("0", False), ("1", True), ("on", True)])
def test_triton_s_latency_summaries_are_asked_for_only_by_the_variable(asked, summaries, monkeypatch):
    """Both servers the lab starts take their /metrics flags from one place (app.server.embedded.metrics_flags)."""
    from app.server.embedded import SUMMARIES_VARIABLE, metrics_flags  # noqa: PLC0415

    monkeypatch.setenv(SUMMARIES_VARIABLE, asked)
    flag = "--metrics-config=summary_latencies=true"
    assert (flag in metrics_flags()) is summaries and "--metrics-interval-ms=1000" in metrics_flags()
    assert (flag in run_kwargs(DockerOptions(), (18000, 18001, 18002), "tbl-triton-18000")["command"]) is summaries
