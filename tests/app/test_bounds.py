"""One set of bounds behind every way to start load or store text: the traffic form, A/B plans, sweep spaces,
scenarios and their CLI, the experiment store's labels and the raw config text, held to loadgen.limits and
app.text_limits with the review's extreme values (no server: each is refused before anything runs)."""
from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from app.config.apply import ConfigService
from app.config.errors import ConfigValidationError
from app.config.history import ConfigHistory
from app.experiments.ab.comparison import ABPlan, Arm, run_ab
from app.experiments.sweep.space import CONCURRENCY, RATE, SearchSpace
from app.store.database import Experiment, ExperimentStore, Study
from app.cli import scenarios as scenarios_cli
from app.scenarios.base import Phase, Scenario
from app.scenarios.catalog import SCENARIOS
from app.scenarios.runner import check_phases, run_scenario
from app.server.endpoint import Endpoint
from app.text_limits import MAX_CONFIG_CHARS, MAX_LABEL_CHARS
from app.traffic.form import LIMITS as FORM_LIMITS, TrafficForm, build_spec, problems
from loadgen.limits import LIMITS
from loadgen.spec import LoadSpec, Mode
from loadgen.spec_limits import arrays_bytes
from loadgen.specfile import spec_to_dict
from loadgen.generate_stream import StreamSpec

NAN, INF = float("nan"), float("inf")
CONFIG = 'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
SPEC = spec_to_dict(LoadSpec(mode=Mode.CLOSED, concurrency=8, model="m", seed=1))
NOWHERE = Endpoint("http://127.0.0.1:9", "127.0.0.1:9", "http://127.0.0.1:9/metrics")


class Untouchable:
    """A lab that fails the test when anything is asked of it: a refusal must come before the lab is used."""

    def __getattr__(self, name):
        raise AssertionError(f"the lab was used ({name}) before the bounds were checked")


# --- the traffic form reads the table -----------------------------------------------------------------------------
def test_the_form_s_bounds_are_the_table_s_with_the_form_s_floors():
    for name in ("concurrency", "rate", "duration_s", "timeout_ms", "sla_ms", "sequences", "sequence_length"):
        form, table = FORM_LIMITS[name], LIMITS[name]
        assert form.high == table.high and form.low >= table.low, (name, form, table)


@pytest.mark.parametrize("change, words", [
    ({"concurrency": 1000}, "concurrency must be between 1 and 256; 1000 was typed"),
    ({"mode": "open", "rate": 1e9}, "rate (req/s) must be between 1 and 5000; 1000000000.0 was typed"),
    ({"mode": "open", "rate": NAN}, "rate (req/s) must be a finite number between 1 and 5000; nan was typed"),
    ({"duration_s": INF}, "stop after (s) must be a finite number between 5 and 3600; inf was typed"),
    ({"sla_ms": NAN}, "SLA (ms) must be a finite number between 1 and 30000; nan was typed"),
])
def test_the_form_refuses_the_extremes_by_name(change, words):
    form = dataclasses.replace(TrafficForm(model="m"), **change)
    assert words in problems(form), problems(form)
    with pytest.raises(ValueError, match=words.split(" must")[0].replace("(", r"\(").replace(")", r"\)")):
        build_spec(form)


# --- A/B plans ------------------------------------------------------------------------------------------------------
def _plan(spec: dict | None = None, **fields) -> ABPlan:
    arms = fields.pop("arms", (Arm("A", CONFIG), Arm("B", CONFIG.replace("8", "4"))))
    return ABPlan("m", arms, spec if spec is not None else SPEC, **fields)


@pytest.mark.parametrize("spec, fields, words", [
    ({**SPEC, "concurrency": 1000}, {}, "concurrency = 1000: concurrency must be between 0 and 256"),
    ({**SPEC, "concurrency": 1_000_000}, {}, "concurrency = 1000000"),
    ({**SPEC, "mode": "open", "rate": 1e9}, {}, "rate = 1000000000.0: rate (req/s) must be between 0 and 5000"),
    ({**SPEC, "mode": "open", "rate": NAN}, {}, "rate = nan"),
    (None, {"trial_s": 1e9}, "trial_s = 1000000000.0: seconds measured per trial must be between 1 and 600"),
    (None, {"trial_s": INF}, "trial_s = inf"),
    (None, {"trials": 1_000_000_000}, "trials = 1000000000: trials must be between 2 and 20"),
    (None, {"warmup_s": NAN}, "warmup_s = nan"),
    (None, {"min_effect": 5.0}, "min_effect = 5.0"),
    (None, {"arms": tuple(Arm(f"arm {i}", CONFIG) for i in range(9))}, "configurations = 9"),
    (None, {"arms": (Arm("A" * 101, CONFIG), Arm("B", CONFIG))}, "is 101 characters; it may have at most 100"),
    (None, {"arms": (Arm("A", CONFIG + "#" * MAX_CONFIG_CHARS), Arm("B", CONFIG))}, "256 KiB"),
    ("not a mapping", {}, "a LoadSpec as a mapping"),
])
def test_an_ab_plan_outside_the_table_is_refused(spec, fields, words):
    with pytest.raises(ValueError) as refused:
        _plan(spec, **fields)
    assert words in str(refused.value), str(refused.value)


def test_an_ab_plan_inside_the_table_is_kept():
    plan = _plan(trials=20, trial_s=600, warmup_s=60)
    assert plan.load_spec().duration_s == 661 and ABPlan.from_dict(plan.to_dict()) == plan


def test_a_stored_plan_outside_the_table_is_refused_when_read_back():
    stored = {**_plan().to_dict(), "spec": {**SPEC, "concurrency": 1000}}
    with pytest.raises(ValueError, match="concurrency = 1000"):
        ABPlan.from_dict(stored)


def test_a_comparison_label_too_long_is_refused_before_the_lab_does_anything(tmp_path):
    lab = SimpleNamespace(experiments=ExperimentStore(tmp_path / "e.db"))  # Start.now would need much more
    with pytest.raises(ValueError, match="the comparison's label is 200,000 characters; it may have at most 200"):
        run_ab(lab, _plan(), label="x" * 200_000)
    assert lab.studies() == []


# --- sweep spaces ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, words", [
    ({"load_kind": RATE, "loads": (NAN,)}, "loads[0] = nan"),
    ({"load_kind": RATE, "loads": (10.0, INF)}, "loads[1] = inf"),
    ({"load_kind": RATE, "loads": (1e9,)}, "load level = 1000000000.0: rate (req/s) must be between 0 and 5000"),
    ({"load_kind": CONCURRENCY, "loads": (1000,)}, "load level = 1000: concurrency must be between 1 and 256"),
    ({"loads": tuple(range(1, 34))}, "loads (how many) = 33: load levels of a sweep must be between 1 and 32"),
    ({"p99_budget_ms": INF}, "p99_budget_ms = inf"),
    ({"p99_budget_ms": 1e9}, "p99_budget_ms = 1000000000.0: SLA (ms) must be positive and at most 30000"),
    ({"min_throughput_rps": NAN}, "min_throughput_rps = nan"),
    ({"max_batch_sizes": (10**9,)}, "batch size = 1000000000"),
])
def test_a_sweep_space_outside_the_table_is_refused(fields, words):
    with pytest.raises(ValueError) as refused:
        SearchSpace(model="m", **fields)
    assert words in str(refused.value), str(refused.value)


# --- scenarios ------------------------------------------------------------------------------------------------------
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


def test_the_scenario_cli_refuses_before_starting_a_server(monkeypatch, capsys):
    bad = _scenario(Phase("long", "", lambda c: c, LoadSpec(model="m", duration_s=None), seconds=1e9))
    monkeypatch.setitem(SCENARIOS, bad.name, bad)
    import app.lab.root  # noqa: PLC0415

    monkeypatch.setattr(app.lab.root.Lab, "create", classmethod(lambda cls, env=None: pytest.fail("a server started")))
    assert scenarios_cli.main(["run", bad.name]) == 2
    assert "error: bad-bounds: phase 'long': seconds = 1000000000.0" in capsys.readouterr().err


# --- stored text ----------------------------------------------------------------------------------------------------
def test_labels_over_the_maximum_are_refused_by_the_store(tmp_path):
    store = ExperimentStore(tmp_path / "e.db")
    huge = "x" * 200_000
    with pytest.raises(ValueError, match="the run's label is 200,000 characters; it may have at most 200"):
        store.add_run(Experiment(huge, "m", CONFIG))
    with pytest.raises(ValueError, match="the sweep's label is 200,000 characters"):
        store.add_study(Study("sweep", huge, "m", {}, time.time()))
    run = store.add_run(Experiment("y" * MAX_LABEL_CHARS, "m", CONFIG))  # at the maximum: kept whole
    study = store.add_study(Study("ab", "fine", "m", {}, time.time()))
    with pytest.raises(ValueError, match="the run's label is 201 characters"):
        store.relabel_run(run, "z" * (MAX_LABEL_CHARS + 1))
    with pytest.raises(ValueError, match="the study's label is 200,000 characters"):
        store.update_study(study, label=huge)
    assert store.run(run).label == "y" * MAX_LABEL_CHARS and store.study(study).label == "fine"
    assert store.runs() == [store.run(run)]


def test_a_config_text_over_256_kib_is_refused_before_the_server_is_asked(tmp_path):
    service = ConfigService(NOWHERE, tmp_path, history=ConfigHistory(tmp_path / "history"))
    huge = CONFIG + "#" * MAX_CONFIG_CHARS
    for call in (service.apply_text, service.text_preview):
        with pytest.raises(ConfigValidationError, match="config.pbtxt: the config text is 262,190 characters"):
            call("m", huge)


# --- bytes per request ------------------------------------------------------------------------------------------------
BIG = """name: "big"
backend: "python"
input { name: "X" data_type: TYPE_FP32 dims: [-1] }
input { name: "S" data_type: TYPE_STRING dims: [2] }
output { name: "Y" data_type: TYPE_FP32 dims: [-1] }
"""


def test_the_form_refuses_a_request_over_64_mib_from_the_served_inputs():
    config = text_format.Parse(BIG, model_config_pb2.ModelConfig())
    fine = TrafficForm(model="big", shapes=(("X", "1000"),))
    assert problems(fine, config) == []
    huge = TrafficForm(model="big", shapes=(("X", "20000000"),))  # 20 M FP32 values: 80,000,000 bytes + 2 strings
    wrong = problems(huge, config)
    assert wrong == ["model big: one request's inputs are 80,000,040 bytes; bytes of one request's inputs must be at "
                     "most 67,108,864 (64 MiB): send fewer rows or shorter lengths"], wrong


def test_request_bytes_count_values_and_strings_as_sent():
    arrays = [np.zeros(10, np.float32), np.array([b"ab", b"c"], dtype=object)]
    assert arrays_bytes(arrays) == 40 + (4 + 2) + (4 + 1)
