"""A scenario's phases inside the one table of load bounds, refused before the lab is used; the phase table and its
cautions (figures written by hand); and on a FakeLab a scenario leaves the operator's traffic and config as it found
them. (Whether a scenario's claim holds: `python -m app.scenarios run --all`.)"""
from __future__ import annotations

import threading

import pytest

from app.config.model_config import parse_config
from app.experiments.sweep.space import Choice
from app.scenarios.base import Check, Phase, Scenario
from app.scenarios.claims import SCENARIOS
from app.scenarios.runner import caution, check_phases, phase_table, run_scenario
from loadgen.generate_stream import StreamSpec
from app.store.database import CANCELLED, DONE, Experiment
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.unit.experiments.metered import metered

NAN, INF = float("nan"), float("inf")


class Untouchable:
    """A lab that fails the test when anything is asked of it: a refusal must come before the lab is used."""

    def __getattr__(self, name):
        raise AssertionError(f"the lab was used ({name}) before the bounds were checked")


def _scenario(phase: Phase) -> Scenario:
    return Scenario("bad-bounds", "Out of bounds", "instances", "m", "nothing", lambda full: [phase], lambda f: [])


@pytest.mark.parametrize("phase, words", [
    (Phase("long", "", lambda c: c, LoadSpec(model="m", duration_s=None), seconds=1e9),
     "phase 'long': seconds = 1000000000.0: seconds measured per phase must be between 1 and 600"),
    (Phase("nan", "", lambda c: c, LoadSpec(model="m", duration_s=None), warmup_s=NAN), "phase 'nan': warmup_s = nan"),
])
def test_a_scenario_phase_outside_the_table_is_refused_before_the_lab_is_used(phase, words):
    with pytest.raises(ValueError) as refused:
        check_phases([phase])
    assert words in str(refused.value)
    with pytest.raises(ValueError, match=words.split(":")[0]):
        run_scenario(Untouchable(), _scenario(phase))


@pytest.mark.parametrize("fields, words", [({"concurrency": 1000}, "concurrency = 1000"),
                                           ({"timeout_s": INF}, "timeout_s = inf")])
def test_a_stream_spec_outside_the_table_cannot_even_be_built(fields, words):
    """A scenario's streamed phase is refused where its spec is made, before any phase could hold it."""
    with pytest.raises(ValueError, match=words):
        StreamSpec(model="m", **fields)


def test_every_catalog_scenario_fits_the_table_at_both_lengths():
    for scenario in SCENARIOS.values():
        for full in (False, True):
            check_phases(scenario.phases(full))


# --- the phase table ---------------------------------------------------------------------------------------------
def test_a_phase_table_row_per_phase_and_class_with_the_diagnosis_where_there_was_one():
    one_class = Experiment("a", "gpu_sim", "", client={"all": {"throughput_rps": 10.0, "p99_ms": 5.0}},
                           server={"avg_batch": 2.0, "queue_us": 1500.0}, point="A: sick",
                           outcome={"diagnosed": True, "findings": [{"pattern": "A"}], "fix": ""})
    two_classes = Experiment("b", "gpu_sim", "", client={"all": {}, "interactive": {"p99_ms": 1.0},
                                                          "batch": {"p99_ms": 9.0}}, point="mixed", outcome={})
    rows = phase_table([one_class, two_classes])
    assert [(r["phase"], r["class"]) for r in rows] == [("A: sick", ""), ("mixed", "interactive"),
                                                            ("mixed", "batch")]
    assert rows[0]["diagnosis"] == "A" and rows[0]["queue (ms)"] == "1.50" and rows[1]["diagnosis"] == ""
    assert rows[0]["p99 (ms)"] == "5.00" and rows[0]["goodput (req/s)"] == "—", rows[0]  # not measured: a dash


def test_a_phase_in_which_the_generator_fell_behind_is_named():
    """The same rule as the live warning (loadgen.behind): over 5 % of a phase's requests sent over 10 ms late."""
    on_time = {"all": {"requests": 400, "late": 48, "behind": 12, "throughput_rps": 40.0}}  # 3 % over 10 ms
    slipped = {"all": {"requests": 400, "late": 80, "behind": 60, "throughput_rps": 40.0}}  # 15 %
    streamed = {"all": {"tokens_per_s": 900.0, "failures": 0}}  # generations: no schedule to fall behind
    runs = [Experiment(name, "gpu_sim", "", client=client, point=name, outcome={})
            for name, client in (("calm", on_time), ("storm", slipped), ("tokens", streamed))]
    rows = phase_table(runs)
    assert [r.get("generator behind") for r in rows] == ["", "15% sent over 10 ms late", ""]
    note = caution({r.point: r.window() for r in runs})
    assert note.startswith("The load generator fell behind its schedule in 1 of 3 phases (more than 5% of requests "
                           "sent over 10 ms late — storm: 15% sent over 10 ms late)"), note
    assert caution({"calm": runs[0].window(), "tokens": runs[2].window()}) == ""



# --- on a lab: the operator's traffic and config as they were (issue 26) ----------------------------------------
OPERATOR = LoadSpec(mode=Mode.OPEN, rate=20.0, duration_s=None, model="gpu_sim", seed=3,
                    classes=(TrafficClass(sla_ms=100.0),))
# one short phase on another config and other traffic: the scenario changes both, then must give them back
PROBE = Scenario(
    "restore-probe", "Traffic restore probe", "instances", "gpu_sim", "the operator's traffic comes back",
    lambda full: [Phase("two instances", "", lambda base: Choice(instances=2).config(base),
                        LoadSpec(mode=Mode.CLOSED, concurrency=4, duration_s=None, model="gpu_sim", seed=1,
                                 classes=(TrafficClass(sla_ms=100.0),)), seconds=1.0, warmup_s=0.0)],
    lambda figures: [Check("it ran", "one phase", "", True)])


@pytest.mark.parametrize("cancelled", [False, True], ids=["to the end", "cancelled"])
def test_a_scenario_started_while_traffic_runs_leaves_the_same_spec_running(fake, cancelled):
    lab = metered(fake)
    before = parse_config(lab.served_text("gpu_sim"))
    lab.start_traffic(OPERATOR)
    runs = lab.traffic().runs
    cancel = threading.Event()
    if cancelled:
        cancel.set()  # stops before its first phase: it still took the traffic over, and gives it back
    result = run_scenario(lab, PROBE, cancel=cancel)
    study = lab.study(result.study_id)
    print(result.status, "|", study.note, "|", [(m.kind, m.text) for m in lab.markers("gpu_sim")][-6:])
    assert result.status == (CANCELLED if cancelled else DONE), result.note
    assert lab.traffic().running, "the operator's traffic was not started again"
    assert lab.traffic().spec == OPERATOR, lab.traffic().spec
    assert lab.traffic().runs > runs + (0 if cancelled else 1), "no new run: the traffic was never stopped and started"
    assert parse_config(lab.served_text("gpu_sim")) == before, "the starting config is gone"
    assert "the traffic that ran before the scenario runs again" in study.note, study.note
    markers = lab.markers("gpu_sim")
    resumed = [m for m in markers if m.kind == "traffic" and m.text.startswith("traffic start")][-1]
    configs = [m for m in markers if m.kind == "apply"]
    if not cancelled:  # the traffic comes back on the starting config, not on the scenario's
        assert configs and configs[-1].end is not None and configs[-1].end <= resumed.t, (configs[-1], resumed)
        assert "back to the starting config" in configs[-1].text, configs[-1].text


def test_a_scenario_started_with_no_traffic_leaves_none_and_stores_its_study(fake):
    result = run_scenario(metered(fake), PROBE)
    assert result.status == DONE and result.passed, result.note
    study = fake.study(result.study_id)  # stored as a study, with one run per phase
    assert study.kind == "scenario" and study.result["passed"] and [r.point for r in fake.runs(
        study_id=result.study_id)] == ["two instances"]
    assert not fake.traffic().running and "runs again" not in study.note
