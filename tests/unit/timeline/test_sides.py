"""The typed sides of a window's figures: each producer's dict reads back key for key, a row stored by an older
version (or damaged) still reads, and every figure of the metric table has its field on its side."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.metrics.catalog import CLIENT, METRICS
from app.metrics.window import DURATIONS, EXEC, INFER, SUCCESS, CounterDelta, server_figures, server_window
from app.store.database import Experiment, ExperimentStore
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures, client_rows
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.stats import ALL, Bucket, window_rows
from tests.unit.experiments.samples import T0, window


def _bucket() -> Bucket:
    """Return a bucket of answers, a streamed answer, a refusal in the server's words and a cancelled attempt."""
    b = Bucket()
    for i, (outcome, error, detail) in enumerate([(Outcome.OK, "", ""), (Outcome.OK, "", ""),
                                                  (Outcome.ERROR, "http_400", "unexpected shape"),
                                                  (Outcome.CANCELLED, "cancelled", "")]):
        r = Record("default", "m", 0, 0, 0.1 * i, 0.1 * i, 0.02, outcome, error, 1, False, detail,
                   first_s=0.005 if i == 1 else None, responses=3 if i == 1 else 0)
        b.count_sent(r)
        b.count_end(r, outcome is Outcome.OK, at=T0 + i)
    return b


def _poller_window() -> dict:
    """Return a server window as MetricsPoller.window gives it: counter differences and what the poller adds."""
    counters = {SUCCESS: 40.0, INFER: 40.0, EXEC: 10.0, DURATIONS["queue_us"]: 8000.0,
                DURATIONS["compute_infer_us"]: 20000.0, DURATIONS["request_us"]: 30000.0}
    rows = [{"t": T0 + s, "delta": CounterDelta(1.0, counters, {"REJECTED": 1.0}), "pending": float(s), "reset": s == 2}
            for s in range(1, 5)]
    return {**server_window(rows, T0, T0 + 5), "batch_hist": {4: 10}, "per_item_us_by_batch": {4: 500.0}, "up": True,
            "down_s": 0.0}


def test_each_producers_dict_reads_back_key_for_key_through_json():
    rows = window_rows({"default": _bucket()}, 4)
    rows[ALL]["span"], rows[ALL]["target_rps"] = (T0, T0 + 4), 2.5  # what the live lab's window and measure add
    server = _poller_window()
    assert server["resets"] == 1 and server["pending_trend"] == pytest.approx(1.0)
    for made, side in [*((r, ClientFigures) for r in rows.values()), (server, ServerFigures),
                       (server_figures(CounterDelta(0.0)), ServerFigures)]:
        typed = side.from_dict(made)
        assert typed.to_dict() == made, set(typed.to_dict()) ^ set(made)
        assert side.from_dict(json.loads(json.dumps(typed.to_dict()))) == typed  # stored as JSON and read back
    assert ServerFigures.from_dict(json.loads(json.dumps(server))).batch_hist == {4: 10}  # JSON's text keys: sizes
    assert ServerFigures().to_dict() == {}  # a server side that measured nothing stores as before: {}


def test_a_measured_window_is_typed_and_its_stored_form_reads_back():
    measured = window(T0, 2.0, 100.0, 10.0, np.random.default_rng(1), cls=ALL)
    figures = measured.figures("gpu_sim")
    assert isinstance(figures.server, ServerFigures) and isinstance(figures.row(), ClientFigures)
    assert figures.server.batch_hist == {4: 50} and figures.samples() == 200 and figures.seconds == 2.0
    stored = json.loads(json.dumps(figures.to_dict()))
    assert set(stored) == {"t0", "t1", "seconds", "client", "server", "reset"}
    assert Figures.from_dict(stored, "gpu_sim") == figures


def test_a_row_stored_by_an_older_version_or_damaged_still_reads():
    old = {"t0": T0, "t1": T0 + 10,
           "client": {"all": {"ok": 40, "failed": 2, "p99_ms": 12.5, "latency_n": 40, "lateness_ms": {"p99": 1.0},
                              "span_s": [0, 10], "p90_ms": float("nan"), "sent": "many", "retries": True},
                      "broken": ["not", "a", "row"]},
           "server": {"avg_batch": 3.0, "batch_hist": {"4": 9, "x": 1}, "span": [T0, T0 + 10], "fail_by_reason": 7}}
    figures = Figures.from_dict(old, "gpu_sim")
    row = figures.row()
    assert (row.ok, row.failed, row.p99_ms, row.latency_n) == (40, 2, 12.5, 40)  # what it kept reads as it was
    assert row.p90_ms is None and row.sent == 0 and row.retries == 0  # NaN, text and true/false: not figures
    assert row.responses == 0 and row.first_p99_ms is None  # written before responses were counted: none
    assert list(figures.client) == ["all"] and figures.failures() == (2, 42)  # a class that is no row: left out
    assert figures.server.batch_hist == {4: 9} and figures.server.span == (T0, T0 + 10)
    assert figures.server.fail_by_reason is None and figures.get("avg_batch") == 3.0
    for nothing in (None, {}, [], "text", {"client": "x", "server": 3, "t0": "?"}):
        assert Figures.from_dict(nothing) == Figures()


def test_a_broken_stored_run_is_read_and_shown_never_raised(tmp_path):
    store = ExperimentStore(tmp_path / "store.sqlite")
    run_id = store.add_run(Experiment("old run", "gpu_sim", "cfg", T0, T0 + 10,
                                      client={"all": {"p99_ms": "fast", "ok": 40}, "bulk": 3},
                                      server={"avg_batch": [1], "request_count": 40.0}))
    run = store.run(run_id)
    figures = run.window()
    assert run.broken and figures.get("p99_ms") is None and figures.row().ok == 40, run.broken
    assert figures.get("avg_batch") is None and figures.get("request_count") == 40.0 and list(figures.client) == [ALL]


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.key)
def test_every_catalog_figure_has_its_field_on_its_side(m):
    side, other = (ClientFigures, ServerFigures) if m.side == CLIENT else (ServerFigures, ClientFigures)
    value = {"key": 1.0} if m.key == "fail_by_reason" else 7.0
    figures = side(**{m.key: value})
    assert figures.get(m.key) == value and side.from_dict({m.key: value}).get(m.key) == value
    held = Figures("m", 0.0, 1.0, figures if side is ServerFigures else ServerFigures(),
                   {ALL: figures} if side is ClientFigures else {})
    assert held.get(m.key) == value
    assert other().get(m.key) is None  # the other side has no such figure
    assert ClientFigures().get("no_such_figure") is None and ServerFigures().get("get") is None


def test_a_scenarios_streamed_generations_are_client_figures_of_their_own():
    row = {"window_s": 4.0, "n": 12, "failures": 1, "requests_per_s": 2.75, "tokens_per_s": 880.0,
           "ttft_p50_ms": 40.0, "ttft_p99_ms": 90.0, "e2e_p50_ms": 300.0, "e2e_p99_ms": 410.0, "tpot_p50_ms": 9.0,
           "throughput_rps": 2.75, "p50_ms": 300.0, "p99_ms": 410.0}
    figures = Figures("token_sim", 0.0, 4.0, client=client_rows({ALL: row}))
    assert figures.get("tokens_per_s") == 880.0 and figures.get("ttft_p50_ms") == 40.0 and figures.get("n") == 12
    assert figures.get("p99_ms") == 410.0 and figures.behind() is None
    assert {k: v for k, v in figures.row().to_dict().items() if k in row} == row
