"""A/B comparisons: plans inside the one table of bounds (refused before the lab is used, new or read back), a trace's
recommendation by the trace rule; and on a FakeLab a resumed comparison runs only the trials it lacks, in the plan's
alternating order, and serves the starting config again. (That a comparison finds a real difference and calls
identical configs alike: bench/study_claims.py; a whole one on a real server, of a model without config.pbtxt:
tests/contract/cli/test_experiments.py.)"""
from __future__ import annotations

import threading
import time

import pytest

from app.config.model_config import format_config
from app.experiments.ab.comparison import ABPlan, ABResult, Arm, run_ab
from app.experiments.ab.trial import Trial
from app.experiments.driving import Start
from app.experiments.sweep.space import Choice
from app.experiments.trace.play import TraceLoad
from app.store.database import CANCELLED, DONE, Experiment, Study
from app.text_limits import MAX_CONFIG_CHARS
from app.timeline.figures import Figures
from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from tests.unit.experiments.metered import metered

MODEL = "gpu_sim"
NAN, INF = float("nan"), float("inf")
CONFIG = 'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
SPEC = spec_to_dict(LoadSpec(mode=Mode.CLOSED, concurrency=8, model="m", seed=1))


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


def test_the_arms_take_turns_forwards_then_backwards():
    plan = _plan(arms=(Arm("A", CONFIG), Arm("B", CONFIG), Arm("C", CONFIG)))
    assert [[a.name for a in plan.order(t)] for t in range(3)] == [["A", "B", "C"], ["C", "B", "A"], ["A", "B", "C"]]


# --- refused before the lab does anything -------------------------------------------------------------------------
def test_a_comparison_label_too_long_is_refused_before_the_lab_does_anything(fake):
    with pytest.raises(ValueError, match="the comparison's label is 200,000 characters; it may have at most 200"):
        run_ab(fake, _plan(), label="x" * 200_000)
    assert fake.studies() == [] and fake.markers(MODEL) == []


def test_a_comparison_at_concurrency_1000_is_refused_new_or_resumed_before_any_traffic(fake):
    """The review's A/B at concurrency 1,000 ran (1,005 generator threads, no message) where the traffic panel caps
    256: the plan is refused with the table's bound, new or resumed from the store, before the lab stops its
    traffic, runs a trial or sends one request."""
    too_many = {**spec_to_dict(LoadSpec(mode=Mode.CLOSED, concurrency=8, model=MODEL, seed=11)), "concurrency": 1000}
    arms = tuple(Arm(n, fake.served_text(MODEL)) for n in ("A", "B"))
    with pytest.raises(ValueError, match=r"concurrency = 1000: concurrency must be between 0 and 256"):
        ABPlan(MODEL, arms, too_many)
    definition = {"plan": {"model": MODEL, "arms": [{"name": a.name, "config_text": a.config_text} for a in arms],
                           "spec": too_many, "trials": 4, "trial_s": 5.0, "warmup_s": 1.0, "min_effect": 0.03},
                  "start": Start.now(fake, MODEL).to_dict()}
    sid = fake.add_study(Study("ab", "stored at 1,000", MODEL, definition, time.time(), status=CANCELLED))
    threads = {t.name for t in threading.enumerate()}
    with pytest.raises(ValueError, match=r"concurrency = 1000"):
        run_ab(fake, study_id=sid)
    assert not {t.name for t in threading.enumerate()} - threads
    assert fake.traffic().spec is None and not fake.traffic().running and fake.traffic().runs == 0
    assert fake.runs(study_id=sid) == [] and fake.study(sid).status == CANCELLED


# --- on a lab: resumed, it runs only the rest ---------------------------------------------------------------------
def _trial(study_id: int, arm: str, trial: int) -> Experiment:
    """Return a trial as a comparison stores it (made-up figures)."""
    return Experiment(f"{arm} — trial {trial + 1}", MODEL, "cfg", 100.0, 101.0, kind="trial", study_id=study_id,
                      point=f"{arm}#{trial}", client={"all": {"p99_ms": 5.0, "throughput_rps": 100.0, "ok": 100}},
                      outcome={"arm": arm, "trial": trial})


def test_a_resumed_comparison_runs_only_the_trials_it_lacks_and_serves_its_start_again(fake):
    start = Start.now(fake, MODEL)
    two = format_config(Choice(instances=2).config(fake.served_config(MODEL)))
    plan = ABPlan(MODEL, (Arm("A", start.text), Arm("B", two)),
                  spec_to_dict(LoadSpec(mode=Mode.OPEN, rate=50.0, model=MODEL, seed=3)), trials=2, trial_s=1.0,
                  warmup_s=0.0)
    sid = fake.add_study(Study("ab", "cancelled after three trials", MODEL,
                               {"plan": plan.to_dict(), "start": start.to_dict()}, time.time(), status=CANCELLED,
                               base_config=start.text))
    for arm, trial in (("A", 0), ("B", 0), ("A", 1)):  # trial 2 runs B then A: B is the one left
        fake.add_run(_trial(sid, arm, trial))
    result = run_ab(metered(fake), study_id=sid)
    assert result.status == DONE, result.note
    runs = fake.runs(study_id=sid)
    assert sorted(r.point for r in runs) == ["A#0", "A#1", "B#0", "B#1"], [r.point for r in runs]
    new = [r for r in runs if r.point == "B#1"][0]
    assert "count: 2" in new.config_text and new.windows, new  # measured on B's config, second by second
    assert {arm: sorted(per) for arm, per in result.trials.items()} == {"A": [0, 1], "B": [0, 1]}
    applies = [m.text for m in fake.markers(MODEL) if m.kind == "apply"]
    assert applies == ["A/B: B", "comparison ended: back to the starting config"], applies
    assert fake.served_text(MODEL) == start.text and fake.study(sid).status == DONE
    assert not fake.traffic().running


def test_an_ab_result_on_a_trace_recommends_by_the_trace_verdict_not_the_intervals():
    spec = TraceLoad("flash_crowd", compress=400).spec(MODEL, 50, seed=1)
    text = 'name: "gpu_sim"\nmax_batch_size: 4\ninstance_group { count: %d kind: KIND_CPU }\n'
    plan = ABPlan(MODEL, (Arm("one", text % 1), Arm("two", text % 2)), spec_to_dict(spec), trials=2)

    def trial(over: int, good: int, instances: int) -> Trial:
        score = {"sla_ms": 50, "played_s": 9.0, "measured_s": 9.0, "sent": 100, "answered": 100, "failed": 0,
                 "good": good, "goodput_rps": good / 9, "p99_ms": 30, "worst_minute_p99_ms": 30,
                 "worst_minute_at_s": 0.0, "seconds_over": over, "seconds": 9, "few_seconds": 0,
                 "instances": instances, "instance_seconds": 9.0 * instances}
        return Trial(Figures(), trace=score)

    # one: 3 s over in each trial (none allowed at 1 % of 18 s) → does not hold; two holds
    result = ABResult(1, plan, {"one": {0: trial(3, 90, 1), 1: trial(3, 90, 1)},
                                "two": {0: trial(0, 99, 2), 1: trial(0, 99, 2)}})
    pick, why = result.recommendation()
    print(why)
    assert pick == "two" and "holds the SLA" in why
