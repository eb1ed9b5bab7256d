"""The Lab on its default path: no TRITON_URL starts the embedded server; restart keeps the ports."""
from __future__ import annotations

import shutil

from app.lab import Lab
from app.paths import MODEL_REPOSITORY
from app.server.embedded import group_alive


def test_embedded_lab_starts_restarts_and_closes(tmp_path, monkeypatch):
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    repo = tmp_path / "repo"
    shutil.copytree(MODEL_REPOSITORY, repo)
    lab = Lab.create({"TBL_MODEL_REPOSITORY": str(repo)})
    try:
        assert lab.embedded and lab.endpoint.http_url.startswith("http://127.0.0.1:")
        status = lab.status()
        assert status.ready and {m.name for m in status.models} == {"gpu_sim", "mlp", "stream_acc"}
        before = lab.endpoint
        pgid = lab.server.proc.pid
        lab.restart()
        assert lab.endpoint == before and lab.status().ready
        assert [e.kind for e in lab.events.list()] == ["restart"]
        assert not group_alive(pgid), "the old server's processes outlived the restart"
    finally:
        lab.close()
    assert not lab.server.running()


def test_remote_lab_starts_nothing(triton, tmp_path, monkeypatch):
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    lab = Lab.create({"TRITON_URL": triton.url, "TRITON_METRICS_URL": triton.endpoint.metrics_url})
    try:
        assert not lab.embedded and lab.status().version == "2.51.0"
        assert lab.config.repo is None  # nothing to persist to: applies reload only
    finally:
        lab.close()
