"""A session that may not operate (viewer mode) sees no process id, log tail, filesystem path or server address:
the Overview and a concept page on the live lab with traffic running, and the server panel of a lab whose own
server is down. The same pages for an operator show them (so each check can fail)."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from app.metrics.poller import MetricsPoller
from app.server.control_mode import detect
from app.server.endpoint import Endpoint
from app.server.ports import free_port
from app.server.status import fetch_status
from loadgen.spec import LoadSpec
from tests.ui.apptest import open_page, wait_until

PROCESS_ID = re.compile(r"\b(?:PID|pid|process)\s*:?\s*\d+")
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/\\-])(?:/[\w.@+-]+){2,}")


def shown_text(at: AppTest) -> str:
    """Return every text the page shows (Markdown sources, alerts, code, metrics, labels, tables); charts left out."""
    out: list[str] = []

    def walk(node) -> None:
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)
        kind = getattr(node, "type", "")
        if kind == "dataframe":
            out.append(node.value.to_csv())
        elif kind != "unknown":  # charts: their data and Vega specs
            for attr in ("value", "label", "body", "help"):
                try:
                    value = getattr(node, attr)
                except Exception:  # noqa: BLE001 - not every element has every attribute
                    continue
                if isinstance(value, str):
                    out.append(value)

    walk(at._tree)
    return "\n".join(out)


def leaks(text: str, paths: list[str], addresses: list[str], log: str) -> list[str]:
    """Return what a read-only session must not see: process ids, paths, addresses, log lines."""
    found = [m.group(0) for m in PROCESS_ID.finditer(text)]
    found += [p for p in paths if p in text] + [a for a in addresses if a in text]
    found += [m.group(0) for m in ABSOLUTE_PATH.finditer(text)]
    found += [line for line in log.splitlines() if len(line.strip()) > 20 and line.strip() in text]
    return found


@pytest.fixture
def running(lab):
    """Traffic from the built-in generator, so the status names its process for an operator."""
    lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=1, duration_s=120.0))
    wait_until(lambda: lab.load.worker.pid, 30, "the generator's process")
    yield lab
    lab.stop_traffic()


@pytest.mark.parametrize("page", ["lab_pages/overview.py", "lab_pages/dynamic_batching.py"])
def test_a_viewer_sees_no_process_id_path_address_or_log(running, triton, ui_env, monkeypatch, page):
    secret = [str(triton.repo), ui_env["TBL_STATE_DIR"]]
    addresses = [triton.endpoint.http_url, triton.endpoint.grpc_url, triton.endpoint.metrics_url,
                 triton.endpoint.host_port]
    log = triton.server.log_tail(40)
    operator = shown_text(open_page(page))
    pid = running.load.worker.pid
    assert f"PID {pid}" in operator, operator  # the operator sees the generator's process
    if page.endswith("overview.py"):
        assert str(triton.repo) in operator and triton.endpoint.http_url in operator, operator
    monkeypatch.setenv("TBL_VIEWER", "1")
    viewer = shown_text(open_page(page))
    assert "from the built-in generator" in viewer, viewer  # the status is there, without the process id
    found = leaks(viewer, secret, addresses, log)
    assert not found, f"a viewer sees {found}:\n{viewer}"


class _OwnServer:
    """The parts of the lab's own server the panel reads: what it is and its log (a stopped server's last words)."""

    def __init__(self, repo) -> None:
        self.repo = repo

    def describe(self) -> str:
        return "embedded tritonserver (nvidia-pytriton wheel, CPU), process 4242"

    def log_tail(self, lines: int = 40) -> str:
        return f"E1201 12:00:00.000 model_repository_manager.cc:1 failed to load {self.repo}/gpu_sim/1/model.py\n"


def _panel(lab) -> None:
    from app.ui.panels.server_panel import server_panel  # noqa: PLC0415 - the script runs on its own

    server_panel(lab, allow_restart=False)


@pytest.mark.parametrize("backend", ["embedded", "docker"])
def test_a_viewer_of_a_down_server_sees_no_log_tail_process_or_address(tmp_path, monkeypatch, backend):
    port = free_port()  # nothing listens: the server is down, its status and control mode say so in real words
    endpoint = Endpoint(f"http://127.0.0.1:{port}", f"127.0.0.1:{port + 1}", f"http://127.0.0.1:{port + 2}/metrics")
    repo = tmp_path / "model_repository"
    repo.mkdir()
    poller = MetricsPoller(endpoint)
    poller.poll_once()
    server = _OwnServer(repo)
    lab = SimpleNamespace(endpoint=endpoint, repo=repo, server=server, backend=backend, embedded=True,
                          status=lambda: fetch_status(endpoint), metrics=poller,
                          control_mode=detect(endpoint, repo, environ={}))
    monkeypatch.delenv("TBL_VIEWER", raising=False)
    operator = AppTest.from_function(_panel, args=(lab,), default_timeout=30).run()
    assert not operator.exception, [e.value for e in operator.exception]
    seen = shown_text(operator)
    assert "process 4242" in seen and server.log_tail().strip() in seen and str(repo) in seen, seen
    assert f"127.0.0.1:{port}" in seen, seen
    monkeypatch.setenv("TBL_VIEWER", "1")
    viewer = AppTest.from_function(_panel, args=(lab,), default_timeout=30).run()
    assert not viewer.exception, [e.value for e in viewer.exception]
    seen = shown_text(viewer)
    found = leaks(seen, [str(repo)], [f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}", f"127.0.0.1:{port + 2}"],
                  server.log_tail())
    assert not found and not viewer.code, f"a viewer sees {found} (code blocks: {len(viewer.code)}):\n{seen}"
    assert any("does not answer" in e.value or "not answering" in e.value for e in viewer.error), seen


def test_redacted_keeps_the_words_and_drops_addresses_paths_and_process_ids():
    from app.ui.text import redacted  # noqa: PLC0415

    text = ("failed to load /srv/models/m/1/model.py: the server at http://10.0.0.5:8000 (grpc 10.0.0.5:8001, "
            "localhost:8002) refused; process 4242's command line; 12 req/s, 1/2 of /metrics, Triton 2.51.0")
    out = redacted(text)
    assert out == ("failed to load [path]: the server at [address] (grpc [address], [address]) refused; "
                   "process [id]'s command line; 12 req/s, 1/2 of /metrics, Triton 2.51.0"), out
