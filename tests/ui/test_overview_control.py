"""The Overview's server panel on hand-started servers: control mode, whether Apply works and why not, the repository
the lab writes, where the figures come from, and models that do not serve first with their reason in full."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from streamlit.testing.v1 import AppTest

from app.metrics.poller import MetricsPoller
from app.server.control_mode import detect
from app.server.ports import free_port
from app.server.status import fetch_status
from tests.server.hand_started import explicit_server, none_server, poll_server  # noqa: F401 - fixtures
from tests.ui.apptest import metric, ok, texts


def _panel(lab) -> None:
    from app.ui.panels.server_panel import server_panel  # noqa: PLC0415 - the script runs on its own

    server_panel(lab, allow_restart=False)


def _lab(server, repo=None, metrics_up: bool = True, mode: bool = True) -> SimpleNamespace:
    """What the panel reads of a Lab, on a real server (the lead's Lab exposes the same attributes)."""
    endpoint = server.endpoint if metrics_up else replace(server.endpoint,
                                                          metrics_url=f"http://127.0.0.1:{free_port()}/metrics")
    poller = MetricsPoller(endpoint)
    poller.poll_once()
    lab = SimpleNamespace(endpoint=endpoint, repo=repo, server=None, backend="remote", embedded=False,
                          status=lambda: fetch_status(endpoint), metrics=poller)
    if mode:
        lab.server_facts().control = detect(endpoint, repo, environ={})
    return lab


def _open(lab) -> AppTest:
    return ok(AppTest.from_function(_panel, args=(lab,), default_timeout=30).run())


def test_mode_none_says_why_apply_is_off_and_lists_the_unavailable_model_first(none_server):
    at = _open(_lab(none_server))
    assert metric(at, "Model control") == "none"
    warnings = texts(at.warning)
    assert any(w.startswith("Apply is off: the server runs with --model-control-mode=none") and
               "--model-control-mode=explicit" in w for w in warnings), warnings
    table = at.dataframe[0].value
    assert table.iloc[0]["model"] == "onnx_plain" and table.iloc[0]["state"] == "UNAVAILABLE", table
    assert set(table.iloc[1:]["state"]) == {"READY"}
    assert any(w.startswith("`onnx_plain` (version 1) is UNAVAILABLE: ") and "try specifying runtime on the model "
               "configuration" in w for w in warnings), warnings  # the reason in full, not cut by the table
    assert any("Server figures come from **/metrics**" in m for m in texts(at.markdown))


def test_poll_mode_with_its_repository_applies_and_says_the_statistics_api_stands_in(poll_server):
    at = _open(_lab(poll_server, repo=poll_server.repo, metrics_up=False))
    assert metric(at, "Model control") == "poll"
    assert any("The lab can apply" in s for s in texts(at.success))
    markdown = texts(at.markdown)
    assert any("(every 1 s)" in m for m in markdown) and any(f"`{poll_server.repo}`" in m for m in markdown)
    assert any("--repository-poll-secs=1" in c for c in texts(at.caption))
    warnings = texts(at.warning)
    assert any("**statistics API**" in w and "pending queue" in w and "TRITON_METRICS_URL" in w for w in warnings)


def test_explicit_mode_without_a_repository_says_changes_last_until_a_restart(explicit_server):
    at = _open(_lab(explicit_server, mode=False))  # no control_mode yet: the panel finds it itself
    assert metric(at, "Model control") == "explicit"
    assert any("The lab can apply" in s for s in texts(at.success))
    assert any("**none** — changes last until the server restarts" in m and str(explicit_server.repo) in m
               for m in texts(at.markdown))
