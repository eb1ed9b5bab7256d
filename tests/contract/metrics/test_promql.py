"""Two real tritonservers as two replicas, a real Prometheus scraping both: PromQL figures per replica and
for the fleet, checked against each server's own counters."""
from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
import tritonclient.http as http

from app.metrics.promql import FLEET, PromQLSource, balance
from app.metrics.scrape import PENDING, fetch_text, parse_metrics
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.free_ports import free_port
from tests.helpers import copy_of_the_lab_repository, gpu_sim_input, require_tool, wait_until

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
QUEUE, SUCCESS = "nv_inference_queue_duration_us", "nv_inference_request_success"


@pytest.fixture(scope="module")
def replica_b(tmp_path_factory):
    """A second tritonserver (gpu_sim only) on free ports: the fleet's other replica."""
    base = tmp_path_factory.mktemp("replica-b")
    repo = copy_of_the_lab_repository(base)
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None,
                                          metrics_port=None, models=("gpu_sim",), log_dir=base))
    endpoint = server.start()
    yield endpoint
    server.stop()


@pytest.fixture(scope="module")
def prometheus(triton, replica_b, tmp_path_factory):
    """A real Prometheus on a free loopback port scraping both replicas every second."""
    require_tool(PROMETHEUS, "prometheus")
    base = tmp_path_factory.mktemp("prometheus")
    targets = ", ".join(f"'{urllib.parse.urlparse(e.metrics_url).netloc}'" for e in (triton.endpoint, replica_b))
    (base / "prometheus.yml").write_text("global: {scrape_interval: 1s}\n"
                                         f"scrape_configs: [{{job_name: triton, static_configs: [{{targets: [{targets}]}}]}}]\n")
    port = free_port()
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={base / 'prometheus.yml'}",
                             f"--storage.tsdb.path={base / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    source = PromQLSource(f"http://127.0.0.1:{port}", job="triton")
    try:
        wait_until(lambda: _quiet(lambda: len(source.replicas("gpu_sim")) == 2), 60, "Prometheus scraping both")
        yield source
    finally:
        source.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def _quiet(check):
    try:
        return check()
    except Exception:  # noqa: BLE001 - not up yet
        return False


def _own(endpoint) -> dict:
    values = parse_metrics(fetch_text(endpoint.metrics_url), time.time()).models["gpu_sim"]
    return {SUCCESS: values.counters.get(SUCCESS, 0.0), QUEUE: values.counters.get(QUEUE, 0.0)}


def _send(endpoint, n: int) -> None:
    def one(_):
        http.InferenceServerClient(endpoint.host_port).infer("gpu_sim", [gpu_sim_input()])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(n)))


def test_promql_figures_per_replica_and_for_the_fleet_match_the_servers_counters(triton, replica_b, prometheus):
    a_net = urllib.parse.urlparse(triton.endpoint.metrics_url).netloc
    b_net = urllib.parse.urlparse(replica_b.metrics_url).netloc
    assert prometheus.replicas("gpu_sim") == sorted([a_net, b_net])
    before = {a_net: _own(triton.endpoint), b_net: _own(replica_b)}
    t0 = time.time()

    def scraped_since(t: float, values: dict | None = None):
        rows = prometheus.query(f'timestamp({SUCCESS}{{model="gpu_sim"}})')
        stamps = {labels["instance"]: value for labels, value in rows}
        counts = {labels["instance"]: value for labels, value in prometheus.query(f'{SUCCESS}{{model="gpu_sim"}}')}
        return len(stamps) == 2 and min(stamps.values()) > t and (
            values is None or all(counts.get(k) == values[k][SUCCESS] for k in values))

    wait_until(lambda: scraped_since(t0), 30, "a scrape of both replicas before the traffic")
    _send(triton.endpoint, 60)
    _send(replica_b, 20)
    after = {a_net: _own(triton.endpoint), b_net: _own(replica_b)}
    sent_at = time.time()
    wait_until(lambda: scraped_since(sent_at + 6, after), 40, "Prometheus to scrape the final counts, then more")
    at = time.time()
    seconds = math.ceil(at - t0 + 0.5)  # the window starts just before the first scrape that precedes the traffic
    figures = prometheus.window("gpu_sim", seconds, at)
    print({k: {m: f.get(m) for m in ("request_count", "queue_us", "avg_batch", "request_rps", "pending")}
           for k, f in figures.items()}, before, after)
    for replica, sent in ((a_net, 60), (b_net, 20)):
        own = {k: after[replica][k] - before[replica][k] for k in (SUCCESS, QUEUE)}
        got = figures[replica]
        assert own[SUCCESS] == sent
        # the window holds a scrape before the traffic and after it: increase() reads all of it, extrapolated to the
        # window's edges (by how much depends on when the scrapes fell: not asserted)
        assert got["request_count"] >= sent, (replica, got["request_count"], seconds)
        assert got["queue_us"] == pytest.approx(own[QUEUE] / own[SUCCESS], rel=1e-6)  # a ratio: exact
    fleet = figures[FLEET]
    assert fleet["request_count"] == pytest.approx(figures[a_net]["request_count"] + figures[b_net]["request_count"])
    rates = [figures[r]["request_rps"] for r in (a_net, b_net)]
    assert balance(figures) == pytest.approx(max(rates) / min(rates))  # the busiest replica's rate ÷ the idlest's
    # the queue gauge averaged over the window: four senders have at most four requests in a replica at a scrape;
    # the fleet's is the replicas' sum
    for replica in (a_net, b_net):
        assert 0.0 <= figures[replica]["pending"] <= 4.0, (replica, figures[replica]["pending"])
    assert fleet["pending"] == pytest.approx(figures[a_net]["pending"] + figures[b_net]["pending"]), fleet
    now_pending = prometheus.query(f'{PENDING}{{model="gpu_sim"}}', at)
    assert len(now_pending) == 2 and all(value == 0.0 for _, value in now_pending), now_pending


def test_a_model_name_cannot_smuggle_promql(prometheus):
    with pytest.raises(ValueError, match="model name"):
        prometheus.window('gpu_sim"} or vector(1) or {x="', 10)


def _fleet_page(lab_env: dict, state: str) -> None:
    import os  # noqa: PLC0415 - AppTest runs this function's body as a script

    import streamlit as st  # noqa: PLC0415

    from app.lab.root import Lab  # noqa: PLC0415
    from app.ui.panels.fleet_panel import fleet_panel  # noqa: PLC0415

    os.environ["TBL_STATE_DIR"] = state
    if "lab" not in st.session_state:
        st.session_state.lab = Lab.create(lab_env)
    fleet_panel(st.session_state.lab, "gpu_sim")


def test_a_lab_reading_the_fleet_s_prometheus_shows_every_replica_and_their_sum(triton, replica_b, prometheus,
                                                                                tmp_path):
    from streamlit.testing.v1 import AppTest  # noqa: PLC0415

    replicas = sorted(prometheus.replicas("gpu_sim"))
    env = triton.lab_env(TBL_PROMETHEUS_URL=prometheus.base_url, TBL_PROMETHEUS_JOB="triton")
    at = AppTest.from_function(_fleet_page, args=(env, str(tmp_path)), default_timeout=60).run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        lab = at.session_state.lab
        assert lab.fleet_url() == prometheus.base_url
        assert sorted(lab.fleet_window("gpu_sim", 30)) == sorted([*replicas, FLEET])
        table = at.dataframe[0].value
        assert list(table["replica"]) == [*replicas, FLEET]
        assert at.selectbox[0].options == [FLEET, *replicas]
        at.selectbox[0].set_value(replicas[0]).run()
        assert not at.exception and len(at.metric) == 5
    finally:
        at.session_state.lab.close()
