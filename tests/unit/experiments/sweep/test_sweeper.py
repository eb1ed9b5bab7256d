"""A sweep's control flow on a FakeLab (tiny spaces, windows of a tenth of a second): a refused configuration is a
failed point and the sweep goes on; a cancelled sweep resumed measures only the rest; someone else's Apply or a
restart interrupts it; at the end the starting config serves again (a model without config.pbtxt has none again) and
traffic that ran before runs again. (What a sweep finds on a real server: bench/study_claims.py and
tests/contract/experiments/test_sweep.py.)"""
from __future__ import annotations

import dataclasses
import threading

from app.config.model_config import parse_config
from app.experiments.sweep.space import Choice, SearchSpace
from app.experiments.sweep.sweeper import SweepOptions, load_points, resumed_sweep_job, run_sweep, sweep_job
from app.store.database import CANCELLED, DONE, FAILED, INTERRUPTED
from loadgen.spec import LoadSpec, Mode
from tests.fakes.fake_lab import FakeLab
from tests.helpers import wait_until
from tests.third_party import SOURCE
from tests.unit.experiments.metered import metered

MODEL = "gpu_sim"
QUICK = SweepOptions(window_s=0.1, warmup_reload_s=0.0, warmup_load_s=0.0, max_windows=1, recheck_top=0)


def space(**fields) -> SearchSpace:
    """Return a grid of two instance counts at one load, the starting config not measured on its own."""
    return SearchSpace(**{"model": MODEL, "instances": (1, 2), "delays_us": (), "include_default": False,
                          "loads": (4,), "p99_budget_ms": 1000.0, "adaptive": False, **fields})


def after_points(n: int, act):
    """Return a progress callback that calls act() once, when the sweep has finished n points."""
    acted = []

    def progress(state) -> None:
        if state.done >= n and not acted:
            acted.append(True)
            act()
    return progress


def test_a_refused_configuration_is_a_failed_point_the_sweep_goes_on_and_its_start_serves_again(fake):
    start = fake.served_text(MODEL)
    result = run_sweep(metered(fake), space(instances=(), max_batch_sizes=(0, 8)), label="one refused",
                       options=QUICK)
    by_key = {p.key: p for p in result.points}
    study = fake.study(result.study_id)
    assert result.status == DONE and study.status == DONE, result.note
    assert {"repository", "repository_commit", "repository_changes"} <= set(study.env), study.env  # said in reports
    assert {k: p.status for k, p in by_key.items()} == {"b0@4": FAILED, "b8@4": DONE}, by_key
    assert "could not be applied" in by_key["b0@4"].note and "max_batch_size > 0" in by_key["b0@4"].note
    assert [r.point for r in fake.runs(study_id=result.study_id)] == ["b0@4", "b8@4"]  # both stored, in order
    assert fake.served_text(MODEL) == start and not fake.traffic().running
    assert fake.markers(MODEL)[-1].text == "sweep ended: back to the starting config"


def test_a_cancelled_sweep_keeps_its_points_and_resumed_measures_only_the_rest(fake):
    cancel = threading.Event()
    first = run_sweep(metered(fake), space(), label="stopped", options=QUICK, cancel=cancel,
                      progress=after_points(1, cancel.set))
    study = fake.study(first.study_id)
    assert first.status == CANCELLED and study.status == CANCELLED, study.note
    assert "Resume runs only the rest" in study.note and "the starting config serves again" in study.note
    before = [(p.key, p.id) for p in load_points(fake, first.study_id)]
    assert [k for k, _ in before] == ["i2@4"], before

    fake.start_job(resumed_sweep_job(fake, first.study_id))
    assert fake.wait_job(10) and fake.job().error is None, fake.job().error
    after = load_points(fake, first.study_id)
    assert [(p.key, p.id) for p in after][:1] == before and [p.key for p in after] == ["i2@4", "i1-start@4"], after
    assert fake.study(first.study_id).status == DONE and fake.job().result.status == DONE


def during_the_first_point(lab, act) -> None:
    """Call act() from another thread while the sweep measures its first point (its own reload done)."""
    def wait_and_act() -> None:
        wait_until(lambda: lab.traffic().running and lab.markers(MODEL), 10, "the sweep's first point")
        act()
    threading.Thread(target=wait_and_act, daemon=True).start()


SLOW = dataclasses.replace(QUICK, window_s=0.2, max_windows=10)  # the first point takes 2 s unless interrupted


def test_someone_elses_apply_interrupts_it(fake):
    during_the_first_point(fake, lambda: fake.apply(MODEL, Choice(delay_us=100).config(fake.served_config(MODEL)),
                                                    "an operator's Apply"))
    result = run_sweep(metered(fake), space(instances=(1, 2, 3)), options=SLOW)
    study = fake.study(result.study_id)
    assert result.status == INTERRUPTED == study.status, study.note
    assert study.note.startswith("interrupted: the config changed (an operator's Apply) during the sweep"), study.note
    assert result.points == [] and fake.served_text(MODEL) == study.base_config


def test_a_restart_interrupts_it_and_says_so(tmp_path):
    lab = metered(FakeLab(tmp_path / "lab", backend="embedded"))  # a server the lab started: it can restart it
    try:
        during_the_first_point(lab, lab.restart)
        result = run_sweep(lab, space(instances=(1, 2, 3)), options=SLOW)
        study = lab.study(result.study_id)
        assert result.status == INTERRUPTED == study.status, study.note
        assert study.note.startswith("interrupted: the server restarted"), study.note
        assert result.points == [] and lab.served_text(MODEL) == study.base_config
    finally:
        lab.close()


def test_traffic_that_ran_before_runs_again_after(fake):
    operator = LoadSpec(mode=Mode.OPEN, rate=20.0, duration_s=None, model=MODEL, seed=3)
    fake.start_traffic(operator)
    runs = fake.traffic().runs
    fake.start_job(sweep_job(metered(fake), space(instances=(2,)), "under the operator's traffic", QUICK))
    assert fake.wait_job(10) and fake.job().error is None, fake.job().error
    assert fake.traffic().running and fake.traffic().spec == operator and fake.traffic().runs > runs + 1
    assert "the traffic that ran before the sweep runs again" in fake.study(fake.job().study_id).note


def test_a_model_without_config_pbtxt_has_none_again(tmp_path):
    lab = metered(FakeLab(tmp_path / "lab", repo=SOURCE, models=("py_auto",)))
    try:
        assert lab.file_text("py_auto") is None
        result = run_sweep(lab, space(model="py_auto", instances=(2,)), options=QUICK)
        assert result.status == DONE and [p.key for p in result.points] == ["i2@4"], result.note
        assert "count: 2" in result.points[0].config_text  # measured on its own configuration
        assert lab.file_text("py_auto") is None, "the sweep left a config.pbtxt behind"
        assert "config.pbtxt removed: the model had none" in lab.study(result.study_id).note
    finally:
        lab.close()


def test_a_users_config_is_edited_in_place_for_each_point_and_ends_byte_for_byte(tmp_path):
    """text_len's config.pbtxt has a licence header and comments (a model the lab did not write, issue 24)."""
    lab = metered(FakeLab(tmp_path / "lab", repo=SOURCE, models=("text_len",)))
    try:
        before = lab.file_text("text_len")
        result = run_sweep(lab, space(model="text_len", instances=(1, 2), delays_us=(2000,)), options=QUICK)
        assert result.status == DONE and sorted(p.key for p in result.points) == ["i1-d2000@4", "i2-d2000@4"]
        for p in result.points:  # each measured on its own configuration, the user's text edited in place
            config = parse_config(p.config_text)
            count = config.instance_group[0].count if config.instance_group else 1  # none written: Triton's 1
            assert count == p.choice.instances and p.config_text.startswith(before.split("\n")[0]), p.config_text
        assert lab.file_text("text_len") == before, "text_len/config.pbtxt did not end as it started"
    finally:
        lab.close()


def test_batching_offered_to_a_model_without_a_batch_dimension_fails_the_sweep_with_the_reason(tmp_path):
    """two_inputs has max_batch_size 0: no queue delay can be applied, so the sweep fails — saying why — without
    measuring the starting config alone, and the user's config is untouched."""
    lab = metered(FakeLab(tmp_path / "lab", repo=SOURCE, models=("two_inputs",)))
    try:
        before = lab.file_text("two_inputs")
        result = run_sweep(lab, space(model="two_inputs", delays_us=(0, 2000), include_default=True), options=QUICK)
        study = lab.study(result.study_id)
        assert result.status == FAILED == study.status and "needs max_batch_size > 0" in study.note, study.note
        assert sorted(p.key for p in result.points) == ["i1-d0@4", "i1-d2000@4", "i2-d0@4", "i2-d2000@4"]
        assert all(p.status == FAILED and "needs max_batch_size > 0" in p.note for p in result.points)
        assert lab.file_text("two_inputs") == before and not lab.traffic().running
    finally:
        lab.close()


def test_a_configuration_the_server_refuses_to_load_is_a_failed_point_with_its_words(fake):
    fake.refuse_loads(MODEL, "failed to load 'gpu_sim': out of memory")
    start = fake.served_text(MODEL)
    result = run_sweep(metered(fake), space(instances=(2,)), options=QUICK)
    (point,) = result.points
    assert point.status == FAILED and "out of memory" in point.note, point
    assert result.status == FAILED and "none of the 1 configurations could be applied" in result.note, result.note
    assert fake.served_text(MODEL) == start


def test_a_round_of_remeasurements_removes_the_fewest_instances():
    from app.experiments.sweep.points import Point
    from app.experiments.sweep.sweeper import teardown_order

    i2, i3, i4 = (Choice(instances=n, delay_us=5000) for n in (2, 3, 4))
    d2 = Choice(instances=2, delay_us=2000)
    best_first = [Point(i3, 8), Point(i4, 8), Point(d2, 8), Point(i2, 8)]
    order = lambda serving: [p.key for p in teardown_order(best_first, serving, lambda c: c.instances)]  # noqa: E731
    # From 4 instances: 4, 3, 2 removes one at a time (2 in all); the best-first 3, 4, 2 would remove 1 then 2.
    assert order(i4) == ["i4-d5000@8", "i3-d5000@8", "i2-d2000@8", "i2-d5000@8"]
    # What serves now goes first (no reload), then the most instances; one count keeps the best-first order.
    assert order(i2) == ["i2-d5000@8", "i4-d5000@8", "i3-d5000@8", "i2-d2000@8"]
    assert order(None) == ["i4-d5000@8", "i3-d5000@8", "i2-d2000@8", "i2-d5000@8"]


def test_a_twin_ranked_sweep_of_an_ensemble_measures_every_configuration_and_says_why(tmp_path):
    """The twin models one model's queue: an ensemble's are its steps'. Asked to rank one, the sweep says so and
    measures, as a sweep without the twin does, rather than start its search where a wrong model said."""
    lab = metered(FakeLab(tmp_path / "lab", repo=SOURCE, models=("pipeline", "pipe_scale", "pipe_offset")))
    try:
        logs: list[str] = []
        result = run_sweep(lab, space(model="pipeline", instances=(), include_default=True, loads=(2, 4)),
                           options=dataclasses.replace(QUICK, twin_top=1), progress=lambda s: logs.extend(s.log))
        assert result.status == DONE and [p.key for p in result.points] == ["start@2", "start@4"], result.note
        said = " ".join(logs)
        assert "the twin does not rank this sweep: the twin models one model's queue, batcher and instances; " \
               "pipeline is an ensemble" in said, said
    finally:
        lab.close()
