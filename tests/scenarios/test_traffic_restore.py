"""A scenario leaves the operator's traffic as it found it: what ran when it began runs again after it, with the same
spec, on the starting config (issue 26); sweeps and A/B comparisons end through the same StudyDriver.finish."""
from __future__ import annotations

import threading

import pytest

from app.config.model_config import parse_config
from app.experiments.sweep.space import Choice
from app.store.database import CANCELLED, DONE
from app.scenarios.base import Check, Phase, Scenario
from app.scenarios.runner import run_scenario
from loadgen.spec import LoadSpec, Mode, TrafficClass

OPERATOR = LoadSpec(mode=Mode.OPEN, rate=20.0, duration_s=None, model="gpu_sim", seed=3,
                    classes=(TrafficClass(sla_ms=100.0),))
# one short phase on another config and other traffic: the scenario changes both, then must give them back
PROBE = Scenario(
    "restore-probe", "Traffic restore probe", "instances", "gpu_sim", "the operator's traffic comes back",
    lambda full: [Phase("two instances", "", lambda base: Choice(instances=2).config(base),
                        LoadSpec(mode=Mode.CLOSED, concurrency=4, duration_s=None, model="gpu_sim", seed=1,
                                 classes=(TrafficClass(sla_ms=100.0),)), seconds=1.0, warmup_s=0.5)],
    lambda figures: [Check("it ran", "one phase", "", True)])


@pytest.mark.parametrize("cancelled", [False, True], ids=["to the end", "cancelled"])
def test_a_scenario_started_while_traffic_runs_leaves_the_same_spec_running(gpu_sim_lab, cancelled):
    lab = gpu_sim_lab
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


def test_a_scenario_started_with_no_traffic_leaves_none(gpu_sim_lab):
    result = run_scenario(gpu_sim_lab, PROBE)
    assert result.status == DONE, result.note
    assert not gpu_sim_lab.load.running and "runs again" not in gpu_sim_lab.experiments.study(result.study_id).note
