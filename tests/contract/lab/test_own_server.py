"""A Triton the user started by hand, in each --model-control-mode: the lab finds the mode and behaves by it
(issue 24): none → Apply off with the reason and the flag, everything else works; poll → the file is edited and
the server's poll serves it; explicit without the repository → the change lasts until a restart."""
from __future__ import annotations

from dataclasses import replace

import pytest

from app.config.apply import ControlDisabledError
from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.read import settings_of
from app.config.settings import InstanceGroup
from app.lab.root import Lab
from loadgen.spec import LoadSpec, TrafficClass
from tests.helpers import wait_until


@pytest.fixture
def connect(tmp_path, monkeypatch):
    """Return a function that points a lab at a hand-started server (closed after the test)."""
    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path / "state"))
    labs = []

    def make(server, with_repository: bool = True, apply_timeout_s: float = 30.0) -> Lab:
        env = {"TRITON_URL": server.endpoint.http_url, "TRITON_GRPC_URL": server.endpoint.grpc_url,
               "TRITON_METRICS_URL": server.endpoint.metrics_url,
               # these models load in ~1 s, but a poll-mode reload took over 12 s when the first pass started its
               # four workers on two cores (2026-12-02, three runs of three)
               "TBL_APPLY_TIMEOUT_S": f"{apply_timeout_s:g}"}
        if with_repository:
            env["TRITON_MODEL_REPOSITORY"] = str(server.repo)
        labs.append(Lab.create(env))
        return labs[-1]

    yield make
    for lab in labs:
        lab.close()


def two_instances(lab, model: str):
    current = lab.served_config(model)
    return set_settings(current, replace(settings_of(current), instance_groups=(InstanceGroup(count=2),)))


def drive(lab, model: str) -> dict:
    lab.start_traffic(LoadSpec(model=model, concurrency=2, duration_s=None, max_requests=30,
                               classes=(TrafficClass(),)))
    wait_until(lambda: not lab.traffic().running, 60, "the run to end")
    snap = lab.traffic_snapshot(window_s=0)
    assert snap.error is None, snap.error
    return snap.summary["all"]


def test_mode_none_turns_apply_off_with_the_fix_and_the_rest_works(none_server, connect):
    lab = connect(none_server)
    assert lab.server_facts().control.mode == "none", lab.server_facts().control
    blocked = lab.apply_blocked()
    assert blocked and "--model-control-mode=explicit" in blocked
    before = (none_server.repo / "text_len" / "config.pbtxt").read_bytes()
    with pytest.raises(ControlDisabledError, match="--model-control-mode=explicit"):
        lab.apply("text_len", two_instances(lab, "text_len"), "instances 1→2")
    assert (none_server.repo / "text_len" / "config.pbtxt").read_bytes() == before
    assert "not applied" in lab.markers("text_len")[-1].text
    row = drive(lab, "text_len")  # traffic, figures and diagnosis need no control
    assert row["ok"] >= 30 and row["failed"] == 0, row


def test_mode_poll_edits_the_file_and_waits_for_the_server_to_serve_it(poll_server, connect):
    lab = connect(poll_server)
    assert lab.server_facts().control.mode == "poll" and lab.apply_blocked() is None, lab.server_facts().control
    path = poll_server.repo / "text_len" / "config.pbtxt"
    before = path.read_bytes()
    result = lab.apply("text_len", two_instances(lab, "text_len"), "instances 1→2")
    try:
        assert result.transport == "poll" and result.persisted, result
        assert "by the server's repository poll" in result.message
        assert settings_of(lab.served_config("text_len")).instance_groups[0].count == 2
        assert path.read_text().startswith("# Copyright 2026 Example Corp.")
        assert drive(lab, "text_len")["failed"] == 0
    finally:
        lab.undo("text_len")
    assert path.read_bytes() == before
    assert settings_of(lab.served_config("text_len")).instance_groups[0].count == 1


def test_mode_poll_writes_the_old_file_back_when_the_new_one_does_not_serve(poll_server, connect):
    # the server keeps serving the old config and only its log says why, which a remote lab cannot read: the Apply
    # waits its whole timeout whatever the host's speed, so a short one loses nothing
    lab = connect(poll_server, apply_timeout_s=5.0)
    path = poll_server.repo / "text_len" / "config.pbtxt"
    before = path.read_bytes()
    broken = before.decode().replace('backend: "python"', 'backend: "no_such_backend"')
    with pytest.raises(ConfigError) as caught:
        lab.apply_text("text_len", broken, "a backend that does not exist", confirm_contract=True)
    assert "written back" in str(caught.value), caught.value
    assert path.read_bytes() == before
    assert drive(lab, "text_len")["failed"] == 0, "the old config must keep serving"


def test_explicit_mode_without_the_repository_lasts_until_a_restart(explicit_server, connect):
    lab = connect(explicit_server, with_repository=False)
    assert lab.server_facts().control.mode == "explicit" and lab.server_facts().repository is None
    before = (explicit_server.repo / "text_len" / "config.pbtxt").read_bytes()
    result = lab.apply("text_len", two_instances(lab, "text_len"), "instances 1→2")
    try:
        assert not result.persisted and "lasts until the server restarts" in result.message
        assert "count: 2" in result.new_text  # what the page offers to download
        assert settings_of(lab.served_config("text_len")).instance_groups[0].count == 2
        assert (explicit_server.repo / "text_len" / "config.pbtxt").read_bytes() == before
    finally:
        lab.undo("text_len")
    assert settings_of(lab.served_config("text_len")).instance_groups[0].count == 1
