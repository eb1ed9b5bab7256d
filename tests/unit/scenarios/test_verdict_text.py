"""What a verdict says: every scenario's presenter script, checks whose words are the phase table's numbers, and
tables without raw floats or None (issue 26). Pure: figures written by hand, no server."""
from __future__ import annotations

import re

import pytest

from app.store.database import Experiment
from app.scenarios.base import PhaseFigures, figure_text, ratio_check
from app.timeline.sides import ClientFigures, ServerFigures, client_rows
from app.scenarios.claims import SCENARIOS
from app.scenarios.runner import phase_table

# the run: the high-load p50 fell from 63.6 to 44.4 ms and the check said its increase was "0.0"
DELAY_P50_MS = {"low load, delay 0 µs": 1.2, "low load, delay 500 µs": 1.6, "low load, delay 2000 µs": 3.1,
                "low load, delay 10000 µs": 11.3, "high load, delay 0 µs": 63.6, "high load, delay 2000 µs": 50.2,
                "high load, delay 10000 µs": 44.4}
DELAY_BATCH = {"high load, delay 0 µs": 9.5, "low load, delay 10000 µs": 1.1}


def _delay_phases() -> dict[str, PhaseFigures]:
    return {name: PhaseFigures(client={"all": ClientFigures(p50_ms=p50, p99_ms=p50 * 1.5, throughput_rps=40.0)},
                               server=ServerFigures(avg_batch=DELAY_BATCH.get(name, 1.0)))
            for name, p50 in DELAY_P50_MS.items()}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_has_a_presenter_script_with_a_line_for_each_phase(name):
    scenario = SCENARIOS[name]
    script = scenario.script
    assert script is not None, f"{name} has no presenter script"
    for full in (False, True):
        phases = [p.name for p in scenario.phases(full)]
        assert sorted(script.phases) == sorted(phases), (name, full, sorted(script.phases), phases)
    lines = [script.before, script.after_held, script.after_not, *script.phases.values()]
    assert all(line.strip() for line in lines), (name, lines)
    assert len(script.before) <= 400 and all(len(line) <= 400 for line in lines), "a script is said, keep it short"
    assert script.after(True) == script.after_held and script.after(False) == script.after_not


def test_the_high_load_p50_check_says_the_numbers_of_the_phase_table():
    checks = SCENARIOS["queue-delay"].judge(_delay_phases())
    high = next(c for c in checks if c.claim.startswith("at high load"))
    low = next(c for c in checks if c.claim.startswith("at low load"))
    print(low.measured, "|", high.measured)
    assert high.measured == ("high load, delay 0 → 10 ms: p50 63.60 ms → 44.40 ms; p50 change ÷ the low load "
                             "change = -19.20 ms / 10.10 ms = -1.90"), high.measured
    assert low.measured == ("low load, delay 0 → 10 ms: p50 1.20 ms → 11.30 ms; p50 change ÷ 10 ms = +10.10 ms / "
                            "10.00 ms = 1.01"), low.measured
    assert high.ok, "a fall of the median is no cost: the claim holds"  # -19.2 / 10.1 = -1.90 ≤ 0.5
    runs = [Experiment(name, "gpu_sim", "", client=f.client_dicts(), server=f.server.to_dict(), point=name, outcome={})
            for name, f in _delay_phases().items()]
    table = {row["phase"]: row["p50 (ms)"] for row in phase_table(runs)}
    for phase in ("high load, delay 0 µs", "high load, delay 10000 µs"):
        assert f"{table[phase]} ms" in high.measured, (phase, table[phase], high.measured)


def test_the_high_load_check_fails_when_the_delay_costs_as_much_as_at_low_load():
    phases = _delay_phases()
    phases["high load, delay 10000 µs"] = PhaseFigures(client=client_rows({"all": {"p50_ms": 73.6}}),
                                                       server=ServerFigures(avg_batch=9.0))  # +10.0 ms
    high = next(c for c in SCENARIOS["queue-delay"].judge(phases) if c.claim.startswith("at high load"))
    assert not high.ok and "= +10.00 ms / 10.10 ms = 0.99" in high.measured, high.measured


def test_a_missing_median_is_said_not_counted_as_zero():
    phases = _delay_phases()
    phases["low load, delay 0 µs"] = PhaseFigures(client=client_rows({"all": {}}))
    low = next(c for c in SCENARIOS["queue-delay"].judge(phases) if c.claim.startswith("at low load"))
    assert not low.ok and low.measured.endswith("p50 — → 11.30 ms; p50 change ÷ 10 ms: not measured"), low.measured


RAW_FLOAT = re.compile(r"\d\.\d{3,}")  # e.g. 44.9596: a figure past its precision


def test_phase_table_cells_are_text_at_their_precision_and_none_is_a_dash():
    runs = [Experiment("p", "gpu_sim", "", client={"all": {"throughput_rps": 812.4567, "goodput_rps": None,
                                                          "p50_ms": 44.9596, "p99_ms": 63.61234}},
                       server={"avg_batch": 3.14159, "queue_us": 2360.4, "compute_us": None}, point="one"),
            Experiment("t", "token_sim", "", client={"all": {"tokens_per_s": 913.77, "ttft_p50_ms": 4.56789,
                                                          "failures": 0}}, server={}, point="two")]
    rows = phase_table(runs)
    print(rows)
    assert rows[0]["p50 (ms)"] == "44.96" and rows[0]["p99 (ms)"] == "63.61" and rows[0]["avg batch"] == "3.14"
    assert rows[0]["throughput (req/s)"] == "812" and rows[0]["queue (ms)"] == "2.36"
    assert rows[0]["goodput (req/s)"] == "—" and rows[0]["compute (ms)"] == "—"
    assert rows[1]["tokens/s"] == "914" and rows[1]["TTFT p50 (ms)"] == "4.57" and rows[0]["tokens/s"] == ""
    cells = [v for row in rows for v in row.values()]
    assert all(isinstance(v, str) for v in cells), cells
    assert not [v for v in cells if RAW_FLOAT.search(v) or v in ("None", "nan")], cells


def test_a_ratio_check_shows_its_figures_as_the_table_does():
    check = ratio_check("throughput rises", 1520.46, 1010.2, at_least=1.25, what="throughput 2 ÷ 1",
                        key="throughput_rps")
    assert check.measured == "throughput 2 ÷ 1 = 1,520 req/s / 1,010 req/s = 1.51" and check.ok, check.measured
    assert figure_text("compute_us", 12345.6) == "12.35 ms" and figure_text("p99_ms", None) == "—"
