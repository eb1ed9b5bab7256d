"""The history on disk: what one dashboard process saw, the next one shows and measures the same way."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from app.timeline.markers import MarkerLog
from app.metrics.poller import MetricsPoller
from app.server.endpoint import Endpoint
from app.timeline.keeper import TimelineKeeper, TimelineStore
from loadgen.controller import LoadController, _Restored
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec
from loadgen.stats import stats_for

NOW = 1_800_000_000.0
ENDPOINT = Endpoint("http://127.0.0.1:9", "127.0.0.1:9", "http://127.0.0.1:9/metrics")


FIXTURES = Path(__file__).parents[1] / "metrics" / "fixtures"  # tests/unit/metrics/fixtures
SCRAPES = ("s0_idle", "s1_after_200", "s2_after_300")  # recorded from the real server


def parts():
    markers = MarkerLog(clock=lambda: NOW - 100)
    return MetricsPoller(ENDPOINT, clock=lambda: NOW), LoadController(ENDPOINT.http_url, held=markers.held), markers


def polled() -> MetricsPoller:
    """A poller that read the recorded scrapes (metrics and statistics API) at NOW-3, NOW-2, NOW-1."""
    clock = iter([NOW - 3, NOW - 2, NOW - 1])
    names = iter(SCRAPES)
    current = {}

    def fetch(url: str) -> str:
        if url.endswith("/metrics"):
            current["name"] = next(names)
            return (FIXTURES / f"{current['name']}.prom").read_text()
        return (FIXTURES / f"{current['name']}.stats.json").read_text()

    poller = MetricsPoller(ENDPOINT, clock=lambda: next(clock), fetch=fetch)
    for _ in SCRAPES:
        poller.poll_once()
    return poller


def feed_run(load: LoadController, t0: float, seconds: int, seed: int) -> None:
    """A finished run of `seconds` seconds at 50 req/s with random latencies, kept as a past run."""
    spec = LoadSpec(model="gpu_sim", concurrency=4, duration_s=float(seconds))
    stats = stats_for(spec)
    stats.set_start(t0)
    rng = np.random.default_rng(seed)
    stats([Record("default", "gpu_sim", 0, 0, s, s, float(lat), Outcome.OK, "", 1, False)
           for s, lat in zip(np.arange(0, seconds, 0.02), rng.gamma(2.0, 0.01, seconds * 50))])
    load._past.append((_Restored(t0, float(seconds)), stats, spec))


def keeper(path, scope: str, poller, load, markers) -> TimelineKeeper:
    return TimelineKeeper(TimelineStore(path, scope), poller, load, markers, clock=lambda: NOW)


def test_a_new_process_shows_and_measures_what_the_last_one_saw(tmp_path):
    _, load, markers = parts()
    poller = polled()
    feed_run(load, NOW - 200, 60, seed=1)
    first = markers.add("gpu_sim", "traffic", "traffic start")
    band = markers.begin("gpu_sim", "apply", "delay 500 → 2000")
    markers.finish(band)
    keeper(tmp_path / "store.sqlite", "embedded:/repo", poller, load, markers).save()

    poller2, load2, markers2 = parts()
    restored = keeper(tmp_path / "store.sqlite", "embedded:/repo", poller2, load2, markers2).restore()
    assert restored == {"samples": 3, "markers": 2, "runs": 1}
    assert poller2.snapshot("gpu_sim", 600, now=NOW).timeline == poller.snapshot("gpu_sim", 600, now=NOW).timeline
    window, window2 = poller.window("gpu_sim", NOW - 10, NOW), poller2.window("gpu_sim", NOW - 10, NOW)
    assert window2 == window and window["batch_hist"], window  # counter differences and batch sizes alike
    before, after = load.window(NOW - 190, NOW - 150), load2.window(NOW - 190, NOW - 150)
    assert after["all"]["p99_ms"] == before["all"]["p99_ms"] and after["all"]["latency_n"] == before["all"]["latency_n"] == 2000
    assert [m.text for m in markers2.list()] == ["traffic start", "delay 500 → 2000"]
    assert markers2.add("gpu_sim", "traffic", "next").id == first.id + 2  # ids go on: no marker number reused
    rows = load2.snapshot(window_s=NOW).timeline  # no run in the new process: the restored one is drawn
    assert rows and {r["t"] for r in rows} >= {NOW - 200 + 10}


def test_another_lab_and_old_history_are_not_restored(tmp_path):
    _, load, markers = parts()
    poller = polled()
    feed_run(load, NOW - 2000, 60, seed=2)  # ended long before the 15 minutes kept
    keeper(tmp_path / "s.sqlite", "remote:http://a:8000", poller, load, markers).save()
    other = keeper(tmp_path / "s.sqlite", "remote:http://b:8000", *parts()).restore()
    assert other == {"samples": 0, "markers": 0, "runs": 0}
    same = keeper(tmp_path / "s.sqlite", "remote:http://a:8000", *parts()).restore()
    assert same == {"samples": 3, "markers": 0, "runs": 0}  # the run ended too long ago


def test_a_damaged_store_costs_the_history_not_the_start(tmp_path):
    path = tmp_path / "bad.sqlite"
    store = TimelineStore(path, "x")
    with store._connect() as db:
        db.execute("INSERT INTO timeline_samples VALUES ('x', ?, 'not json')", (NOW,))
    assert TimelineKeeper(store, *parts(), clock=lambda: NOW).restore() == {}
