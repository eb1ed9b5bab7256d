"""The fleet view of the Latency breakdown page (app/ui/panels/fleet_panel.py): hidden without a fleet's Prometheus;
with one (the real PromQL client, its Prometheus answered in-process), every replica's figures and the fleet's,
the replica whose queue grows, how uneven the load is."""
from __future__ import annotations

import json
from urllib.parse import parse_qs

import httpx

from app.metrics.promql import PromQLSource
from app.metrics.scrape import COUNTERS
from tests.fakes.fake_lab import FakeLab
from tests.unit.ui.apptest import open_page, texts

REPLICAS = {"r1:8002": 300.0, "r2:8002": 900.0}  # requests answered in the window by each replica


def prometheus(request: httpx.Request) -> httpx.Response:
    """Answer the panel's one query as Prometheus does: a vector, a row per figure per replica and for the fleet."""
    assert "increase(" in parse_qs(request.content.decode())["query"][0]
    rows = []
    for scope, served in [*REPLICAS.items(), ("fleet", sum(REPLICAS.values()))]:
        where = {"tbl_scope": "fleet", "model": "gpu_sim"} if scope == "fleet" else {"instance": scope}
        rows += [({**where, "tbl_figure": name}, served * (2 if "duration" in name else 1)) for name in COUNTERS]
        rows.append(({**where, "tbl_figure": "pending_trend"}, 2.0 if scope == "r2:8002" else 0.0))
    result = [{"metric": labels, "value": [0, str(value)]} for labels, value in rows]
    return httpx.Response(200, text=json.dumps({"status": "success", "data": {"resultType": "vector",
                                                                              "result": result}}))


def test_no_fleet_no_panel(on_fake):
    at = open_page("lab_pages/diagnosis.py")
    assert not [h for h in at.subheader if h.value.startswith("Fleet")]


def test_every_replica_and_the_fleet_with_the_growing_queue_named(install, tmp_path):
    fleet = PromQLSource("http://prometheus.test:9090", client=httpx.Client(transport=httpx.MockTransport(prometheus)))
    install(FakeLab(tmp_path / "fleet", fleet=fleet))
    at = open_page("lab_pages/diagnosis.py")
    assert any(h.value.startswith("Fleet: gpu_sim on every replica") for h in at.subheader)
    table = next(d.value for d in at.dataframe if "replica" in d.value.columns)
    assert list(table["replica"]) == ["r1:8002", "r2:8002", "fleet"], table
    warnings = texts(at.warning)
    assert "The queue is growing on r2:8002: it receives more than it serves." in warnings, warnings
    assert any(w.startswith("Load balance: the busiest replica serves 3.00× the idlest — uneven.") for w in warnings)
