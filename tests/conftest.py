"""Shared fixtures: one real tritonserver per test session, on free ports, on a copy of the repository."""
from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions, group_alive
from app.server.endpoint import Endpoint


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
        import time  # noqa: PLC0415

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


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> TritonFixture:
    """Start one real tritonserver for the session; stop it and all its stubs at the end."""
    base = tmp_path_factory.mktemp("triton")
    repo = base / "model_repository"
    shutil.copytree(MODEL_REPOSITORY, repo)
    server = EmbeddedServer(
        ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None, log_dir=base)
    )
    endpoint = server.start()
    pgid = server.proc.pid
    yield TritonFixture(server, endpoint, repo, MODEL_REPOSITORY)
    server.stop()
    if group_alive(pgid):  # pragma: no cover - stop() failed to clean up
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
    """After a test that used the server, wait for its last requests: the next test's counts start clean.

    A test that sent nothing (every model's counts as they were when it began, nothing pending) needs no
    wait (~40 tests; each saves the half second of stillness).
    """
    triton = request.getfixturevalue("triton") if "triton" in request.fixturenames else None
    before = triton.counts() if triton is not None else None
    yield
    if triton is None:
        return
    now = triton.counts()
    if now == before and all(not pending for _, pending in now.values()):
        return
    triton.wait_idle()


@pytest.fixture
def gpu_sim_lab(triton, restore_model, tmp_path, monkeypatch):
    """A Lab driving the session server (remote mode), its state in tmp_path; gpu_sim's config restored after."""
    from app.lab import Lab  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path))
    restore_model("gpu_sim")
    lab = Lab.create(triton.lab_env())
    yield lab
    lab.close()
