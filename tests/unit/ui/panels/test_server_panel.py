"""The Overview's server panel (app/ui/panels/server_panel.py) on FakeLabs: how configs reach the server in each
control mode and whether Apply works (else why and the flag), where the figures come from, the restart of a server
the lab started — and for a session that may not operate, no process id, log line, path or address anywhere (the
same pages for an operator show them, so each check can fail)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.server.control_mode import ControlMode
from loadgen.spec import LoadSpec
from tests.fakes.fake_lab import ENDPOINT, FakeLab
from tests.unit.ui.apptest import labels, metric, ok, open_page, run_page, texts, widget

PROCESS_ID = re.compile(r"\b(?:PID|pid|process)\s*:?\s*\d+")
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/\\-])(?:/[\w.@+-]+){2,}")
ADDRESSES = [ENDPOINT.http_url, ENDPOINT.grpc_url, ENDPOINT.metrics_url, ENDPOINT.host_port]
LOG = "E1201 12:00:00.000 model_repository_manager.cc:1 failed to load {repo}/gpu_sim/1/model.py: the device is lost"


def test_mode_none_says_why_apply_is_off(install, tmp_path):
    why = "the server runs with --model-control-mode=none: restart it with --model-control-mode=explicit"
    install(FakeLab(tmp_path / "none", control=ControlMode("none", "the load API refused a probe", why_not=why)))
    at = open_page("lab_pages/overview.py")
    assert metric(at, "Model control") == "none"
    assert any(w.startswith("Apply is off: the server runs with --model-control-mode=none") for w in texts(at.warning))
    assert any("Server figures come from **/metrics**" in m for m in texts(at.markdown))


def test_poll_mode_applies_by_writing_the_file_and_the_statistics_api_stands_in_for_metrics(install, tmp_path):
    lab = install(FakeLab(tmp_path / "poll", control=ControlMode("poll", "read from its command line "
                                                                 "(--repository-poll-secs=1)", poll_s=1.0)))
    lab.set_metrics_down()
    at = open_page("lab_pages/overview.py")
    assert metric(at, "Model control") == "poll"
    assert any("The lab can apply" in s for s in texts(at.success)), texts(at.success)
    markdown = texts(at.markdown)
    assert any("(every 1 s)" in m for m in markdown) and any(f"`{lab.repo_copy}`" in m for m in markdown), markdown
    assert any("--repository-poll-secs=1" in c for c in texts(at.caption))
    warnings = texts(at.warning)
    assert any("**statistics API**" in w and "pending queue" in w and "TRITON_METRICS_URL" in w for w in warnings)
    page = open_page("lab_pages/instances.py")  # an Apply: the file written, then the server's poll serves it
    widget(page.slider, "Instances (instance_group.count)").set_value(2).run()
    ok(page.button(key="instances:apply").click().run())
    assert "count: 2" in (lab.repo_copy / "gpu_sim" / "config.pbtxt").read_text()
    assert any("gpu_sim" in s for s in texts(page.success)), texts(page.success)


def test_explicit_mode_without_a_repository_says_changes_last_until_a_restart(install, tmp_path):
    served = Path("/srv/their/models")
    install(FakeLab(tmp_path / "explicit", writes_repository=False,  # TRITON_MODEL_REPOSITORY unset
                    control=ControlMode("explicit", "the load API answered a probe", repository=served)))
    at = open_page("lab_pages/overview.py")
    assert metric(at, "Model control") == "explicit"
    assert any("The lab can apply" in s for s in texts(at.success))
    assert any("**none** — changes last until the server restarts" in m and str(served) in m
               for m in texts(at.markdown)), texts(at.markdown)


def test_a_server_the_lab_started_restarts_and_resumes_its_traffic(install, tmp_path):
    lab = install(FakeLab(tmp_path / "embedded", backend="embedded"))
    lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=10)
    at = open_page("lab_pages/overview.py")
    ok(at.button(key="restart-server").click().run())
    assert any("**stops the running traffic**" in w for w in texts(at.warning)), texts(at.warning)
    ok(at.button(key="restart:resume").click().run())
    assert "Server restarted, traffic resumed." in texts(at.success), texts(at.success)
    assert lab.restarts == 1 and lab.traffic().running
    kinds = [m.kind for m in lab.markers("gpu_sim")]
    assert "restart" in kinds, kinds


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

    walk(at._tree)  # noqa: SLF001 - AppTest's whole element tree
    return "\n".join(out)


def leaks(text: str, secrets: list[str], log: str) -> list[str]:
    """Return what a read-only session must not see: process ids, paths, addresses, log lines."""
    found = [m.group(0) for m in PROCESS_ID.finditer(text)] + [s for s in secrets if s in text]
    found += [m.group(0) for m in ABSOLUTE_PATH.finditer(text)]
    return found + [line for line in log.splitlines() if len(line.strip()) > 20 and line.strip() in text]


@pytest.mark.parametrize("page", ["lab_pages/overview.py", "lab_pages/dynamic_batching.py"])
def test_a_viewer_sees_no_process_id_path_address_or_log(install, tmp_path, monkeypatch, page):
    lab = install(FakeLab(tmp_path / "embedded-lab", backend="embedded"))
    lab.worker.pid = 31337  # the generator's own process, as the real one has
    lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=1, duration_s=600), ran_s=10)
    secrets = [str(lab.repo_copy), str(tmp_path), *ADDRESSES]
    operator = shown_text(open_page(page))
    assert "PID 31337" in operator, operator  # the operator sees the generator's process
    if page.endswith("overview.py"):
        assert str(lab.repo_copy) in operator and ENDPOINT.http_url in operator and "process 4242" in operator
    monkeypatch.setenv("TBL_VIEWER", "1")
    viewer = shown_text(open_page(page))
    assert "from the built-in generator" in viewer, viewer  # the status is there, without the process id
    found = leaks(viewer, secrets, lab.log)
    assert not found, f"a viewer sees {found}:\n{viewer}"


@pytest.mark.parametrize("backend", ["embedded", "docker"])
def test_a_viewer_of_a_down_server_sees_no_log_tail_process_or_address(install, tmp_path, monkeypatch, backend):
    lab = install(FakeLab(tmp_path / backend, backend=backend))
    lab.log = LOG.format(repo=lab.repo_copy)
    lab.set_down()
    operator = shown_text(run_page("lab_pages/overview.py"))
    assert "process 4242" in operator and lab.log in operator and str(lab.repo_copy) in operator, operator
    assert ENDPOINT.host_port in operator, operator
    monkeypatch.setenv("TBL_VIEWER", "1")
    viewer = run_page("lab_pages/overview.py")
    seen = shown_text(viewer)
    found = leaks(seen, [str(lab.repo_copy), *ADDRESSES], lab.log)
    assert not found and not viewer.code, f"a viewer sees {found} (code blocks: {len(viewer.code)}):\n{seen}"
    assert any("down" in e for e in texts(viewer.error)), seen
    assert not [b for b in labels(viewer.button) if b.startswith("Restart")]
