"""The poller with an injected fetch and clock, on captures of a real server (tests/contract/metrics/test_poller.py
polls one)."""
from __future__ import annotations

import threading
import urllib.error

from app.metrics.poller import MetricsPoller
from app.server.endpoint import Endpoint
from tests.helpers import Clock
from tests.unit.metrics.captures import prom, stats, stats_text

EP = Endpoint("http://triton:8000", "triton:8001", "http://triton:8002/metrics")
REFUSED = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))


class FakeServer:
    """Answer each URL from a script of captures, or raise while 'down'."""

    def __init__(self) -> None:
        self.capture: str | None = None
        self.stats_error: Exception | None = None
        self.metrics_error: Exception | None = None
        self.calls: list[str] = []

    def fetch(self, url: str) -> str:
        self.calls.append(url)
        if self.capture is None:
            raise REFUSED
        if url == EP.metrics_url:
            if self.metrics_error is not None:
                raise self.metrics_error
            return prom(self.capture)
        if self.stats_error is not None:
            raise self.stats_error
        assert url == "http://triton:8000/v2/models/stats"
        return stats_text(self.capture)


def _poll(poller, server, clock, capture, t):
    server.capture, clock.now = capture, t
    return poller.poll_once()


def test_rates_and_batch_histogram_from_consecutive_polls():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    _poll(poller, server, clock, "s2_after_300", 1002.0)
    snap = poller.snapshot(model="gpu_sim", window_s=120)
    assert snap.up is True and snap.error is None
    assert snap.models == ("gpu_sim", "mlp", "stream_acc")
    assert [row["t"] for row in snap.timeline] == [1000.0, 1002.0]
    assert snap.timeline[0]["infer_rps"] is None  # the first poll is only a baseline
    assert snap.latest == snap.timeline[-1] and snap.latest["infer_rps"] == 50.0
    assert snap.batch_hist == dict(sorted((k, v - stats("s1_after_200").batches.get(k, 0))
                                          for k, v in stats("s2_after_300").batches.items()))
    assert sum(snap.batch_hist.values()) == snap.latest["exec_count"] == 39


def test_dead_server_rows_then_recovery_after_restart():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    _poll(poller, server, clock, "s2_after_300", 1000.0)
    _poll(poller, server, clock, "s3_after_config_reload", 1001.0)
    down = _poll(poller, server, clock, None, 1002.0)
    assert down.up is False and "Connection refused" in down.error
    snap = poller.snapshot("gpu_sim")
    assert snap.up is False and "Connection refused" in snap.error
    assert snap.latest["up"] is False and snap.latest["infer_rps"] is None and snap.latest["t"] == 1002.0
    _poll(poller, server, clock, None, 1003.0)
    _poll(poller, server, clock, "s4_after_unload_load", 1004.0)  # the restarted server answers
    _poll(poller, server, clock, "s4_after_unload_load", 1005.0)
    snap = poller.snapshot("gpu_sim")
    assert snap.up is True and snap.error is None
    assert [row["up"] for row in snap.timeline] == [True, True, False, False, True, True]
    assert snap.timeline[4]["infer_rps"] is None  # baseline again: no rate across the outage
    assert snap.latest["infer_rps"] == 0 and snap.latest["reset"] is False
    assert snap.batch_hist == stats("s3_after_config_reload").batches  # only s2->s3 had a stats baseline


def test_statistics_failure_keeps_rates_and_says_why():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    server.stats_error = urllib.error.HTTPError(EP.http_url, 400, "Bad Request", None, None)
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    _poll(poller, server, clock, "s2_after_300", 1001.0)
    snap = poller.snapshot("gpu_sim")
    assert snap.up is True and snap.error.startswith("statistics API: HTTPError")
    assert snap.latest["infer_count"] == 100 and snap.batch_hist == {}


def test_window_history_bound_and_copies():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, interval_s=1.0, history_s=5.0, clock=clock, fetch=server.fetch)
    for i in range(10):
        _poll(poller, server, clock, "s1_after_200", 1000.0 + i)
    assert len(poller.snapshot("gpu_sim", window_s=3600).timeline) == 6
    assert [r["t"] for r in poller.snapshot("gpu_sim", window_s=2.5).timeline] == [1007.0, 1008.0, 1009.0]
    snap = poller.snapshot("gpu_sim")
    snap.timeline[-1]["fail_by_reason"]["REJECTED"] = 99.0
    snap.timeline[-1]["infer_rps"] = -1
    again = poller.snapshot("gpu_sim").latest
    assert again["infer_rps"] == 0 and again["fail_by_reason"]["REJECTED"] == 0


def test_given_models_and_unknown_model():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, models=("gpu_sim", "resnet"), clock=clock, fetch=server.fetch)
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    assert poller.snapshot().models == ("gpu_sim", "resnet")
    assert poller.snapshot().timeline == [] and poller.snapshot().latest is None
    assert "not in /metrics" in poller.snapshot("resnet").latest["error"]
    assert "not in /metrics" in poller.snapshot("mlp").latest["error"]


def test_snapshot_before_any_poll():
    snap = MetricsPoller(EP, clock=Clock(1000.0), fetch=FakeServer().fetch).snapshot("gpu_sim")
    assert snap.up is False and snap.error == "waiting for the first scrape" and snap.timeline == []


def test_thread_polls_until_stopped():
    server = FakeServer()
    server.capture = "s1_after_200"
    polled = threading.Event()

    def fetch(url):
        polled.set()
        return server.fetch(url)

    poller = MetricsPoller(EP, interval_s=0.01, fetch=fetch)
    poller.start()
    assert polled.wait(5) and poller.running()
    poller.stop()
    assert not poller.running()
    count = len(server.calls)
    assert poller.snapshot("gpu_sim", window_s=3600).timeline
    assert len(server.calls) == count


def test_unreadable_metrics_body_is_a_down_row_naming_the_url():
    poller = MetricsPoller(EP, clock=Clock(1000.0), fetch=lambda url: "<html>not metrics</html>\n")
    sample = poller.poll_once()
    assert sample.up is False and sample.error.startswith("http://triton:8002/metrics: ValueError")


def test_without_metrics_the_statistics_api_stands_in_and_metrics_are_retried_every_so_often():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch, metrics_retry_s=10.0)
    server.metrics_error = REFUSED
    first = _poll(poller, server, clock, "s1_after_200", 1000.0)
    assert first.up and first.source == "statistics API" and "Connection refused" in first.metrics_error
    second = _poll(poller, server, clock, "s2_after_300", 1002.0)
    assert second.rows["gpu_sim"]["request_count"] == 100 and second.rows["gpu_sim"]["pending"] is None
    assert sum(second.batches["gpu_sim"].values()) == second.rows["gpu_sim"]["exec_count"] == 39
    server.metrics_error, server.calls = None, []
    _poll(poller, server, clock, "s2_after_300", 1005.0)  # /metrics is back, but not due for a retry
    assert EP.metrics_url not in server.calls
    back = _poll(poller, server, clock, "s2_after_300", 1012.0)
    assert EP.metrics_url in server.calls and back.source == "statistics API"  # no /metrics baseline yet
    again = _poll(poller, server, clock, "s2_after_300", 1013.0)
    assert again.source == "metrics" and again.metrics_error is None
    snap = poller.snapshot("gpu_sim", now=1013.0)
    assert snap.source == "metrics" and snap.missing == () and snap.source_note is None
    assert [r["request_count"] for r in snap.timeline] == [None, 100, 0, 0, 0]


def test_a_snapshot_says_where_its_figures_come_from_and_what_they_lack():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    assert poller.snapshot("gpu_sim").source is None
    server.metrics_error = urllib.error.HTTPError(EP.metrics_url, 404, "Not Found", None, None)
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    snap = poller.snapshot("gpu_sim")
    assert snap.source == "statistics API" and "pending queue" in snap.missing
    assert snap.source_note.startswith("http://triton:8002/metrics: HTTPError") and snap.error is None


def test_when_neither_answers_the_row_is_down_and_metrics_are_tried_at_every_poll():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch, metrics_retry_s=60.0)
    down = _poll(poller, server, clock, None, 1000.0)
    assert not down.up and down.source is None and "statistics API" in down.error
    server.calls = []
    _poll(poller, server, clock, "s1_after_200", 1001.0)
    assert server.calls[0] == EP.metrics_url and poller.snapshot("gpu_sim").source == "metrics"


def test_the_source_survives_export_and_restore():
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    server.metrics_error = REFUSED
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    _poll(poller, server, clock, "s2_after_300", 1001.0)
    again = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    assert again.restore(poller.export(0.0)) == 2
    snap = again.snapshot("gpu_sim", now=1001.0)
    assert snap.source == "statistics API" and snap.latest["request_count"] == 100
    old = MetricsPoller(EP, clock=clock, fetch=server.fetch)  # a history saved before sources existed
    old.restore([{k: v for k, v in d.items() if k not in ("source", "metrics_error")} for d in poller.export(0.0)])
    assert old.snapshot("gpu_sim", now=1001.0).source == "metrics"


def test_a_window_carries_the_hosts_cpu_utilisation_over_its_polls():
    """The captures read nv_cpu_utilization 0.01 then 0: a window over both has their mean, one over the second its
    reading; a window without a poll has none."""
    server, clock = FakeServer(), Clock(1000.0)
    poller = MetricsPoller(EP, clock=clock, fetch=server.fetch)
    _poll(poller, server, clock, "s1_after_200", 1000.0)
    _poll(poller, server, clock, "s2_after_300", 1002.0)
    assert poller.window("gpu_sim", 999.0, 1002.0)["cpu_util"] == 0.005
    assert poller.window("gpu_sim", 1001.0, 1002.0)["cpu_util"] == 0.0
    assert poller.window("gpu_sim", 1003.0, 1004.0)["cpu_util"] is None
