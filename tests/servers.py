"""The real tritonserver the contract and smoke tiers share: one per test process (per xdist worker), on free ports,
on a copy of the lab's repository; after each test that used it, idle again before the next one counts."""
from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions, group_alive
from app.server.endpoint import Endpoint, port_options
from tests.helpers import copy_of_the_lab_repository


@dataclass
class TritonFixture:
    """A running embedded server and the repository copy it serves."""

    server: EmbeddedServer
    endpoint: Endpoint
    repo: Path
    pristine: Path

    @property
    def url(self) -> str:
        return self.endpoint.http_url

    def lab_env(self, **more: str) -> dict[str, str]:
        """Return the variables that point a Lab at this server as a remote one (its control key included)."""
        return {"TRITON_URL": self.url, "TRITON_GRPC_URL": self.endpoint.grpc_url,
                "TRITON_METRICS_URL": self.endpoint.metrics_url, "TRITON_MODEL_REPOSITORY": str(self.repo),
                "TRITON_CONTROL_KEY": self.endpoint.control_key or "", **more}

    def counts(self) -> dict:
        """Return every model's (requests answered or failed, pending) from /metrics."""
        from app.metrics.scrape import fetch_text, parse_metrics  # noqa: PLC0415

        scrape = parse_metrics(fetch_text(self.endpoint.metrics_url), 0.0)
        return {name: (v.counters.get("nv_inference_request_success", 0.0) + sum(v.failures.values()), v.pending)
                for name, v in scrape.models.items()}

    def wait_idle(self, timeout_s: float = 60.0) -> None:
        """Wait until no request is pending and no count moves for half a second (a test's stragglers are done)."""
        deadline = time.monotonic() + timeout_s
        last = self.counts()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.counts()
            if now == last and all(not pending for _, pending in now.values()):
                return
            last = now
        pytest.fail(f"the server did not go idle within {timeout_s:.0f} s: {last}")

    def restore(self, model: str) -> None:
        """Put a model's pristine config.pbtxt back and reload it from the file (with the server's control key)."""
        import tritonclient.http as http  # noqa: PLC0415

        shutil.copyfile(self.pristine / model / "config.pbtxt", self.repo / model / "config.pbtxt")
        http.InferenceServerClient(self.endpoint.host_port).load_model(model, headers=self.endpoint.control_headers)

    def revive(self) -> str:
        """Start the server again after it died, on the ports it had where they are free, with the repository as the
        lab ships it; return what the dead one said (its log is kept beside the new one as *.died-<epoch>).

        Triton 2.51 can die on a reload under load ("Signal (11)" in pthread_mutex_lock, as in
        triton-inference-server/server#7723): without this every later test of the worker fails on a dead server."""
        server = self.server
        code = server.proc.returncode if server.proc is not None else None
        said = f"tritonserver exited with code {code}; its log ended:\n{server.log_tail(25)}"
        server.stop()
        if server.log_path is not None and server.log_path.exists():
            server.log_path.rename(server.log_path.with_name(f"{server.log_path.name}.died-{int(time.time())}"))
        shutil.rmtree(self.repo)
        shutil.copytree(self.pristine, self.repo, ignore=shutil.ignore_patterns("__pycache__"))
        server.options = replace(server.options, **port_options(self.endpoint))
        self.endpoint = server.start()
        return said


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> TritonFixture:
    """Start one real tritonserver for the session; stop it and all its stubs at the end."""
    base = tmp_path_factory.mktemp("triton")
    repo = copy_of_the_lab_repository(base, "model_repository")
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                          log_dir=base))
    endpoint = server.start()
    yield TritonFixture(server, endpoint, repo, MODEL_REPOSITORY)
    pgid = server.proc.pid if server.proc is not None else None  # revive may have started another
    server.stop()
    if pgid is not None and group_alive(pgid):  # pragma: no cover - stop() failed to clean up
        os.killpg(pgid, signal.SIGKILL)
        pytest.fail("tritonserver left processes behind after stop()")


@pytest.fixture
def restore_model(triton):
    """Restore the named models' pristine configs after the test."""
    touched: list[str] = []
    yield touched.append
    for model in touched:
        triton.restore(model)


@pytest.fixture(autouse=True)
def _server_idle_after(request):
    """After a test that used the server, wait for its last requests: the next test's counts start clean. A server
    that died in the test fails it with the exit code and log, and is started again for the next."""
    triton = request.getfixturevalue("triton") if "triton" in request.fixturenames else None
    if triton is not None and not triton.server.running():  # died after the last test's check
        print("the session server had died; started again:", triton.revive())
    before = triton.counts() if triton is not None else None
    yield
    if triton is None:
        return
    if not triton.server.running():
        pytest.fail(f"the session server died during this test and was started again. {triton.revive()}")
    now = triton.counts()
    if now == before and all(not pending for _, pending in now.values()):
        return
    triton.wait_idle()


@pytest.fixture
def gpu_sim_lab(triton, restore_model, tmp_path, monkeypatch):
    """A Lab driving the session server (remote mode), its state in tmp_path; gpu_sim's config restored after."""
    from app.lab.root import Lab  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path))
    restore_model("gpu_sim")
    lab = Lab.create(triton.lab_env())
    yield lab
    lab.close()
