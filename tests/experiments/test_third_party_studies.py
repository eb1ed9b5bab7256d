"""Sweeps and A/B comparisons on models the lab did not write (issue 24): they reach a result, and every model ends
as it started — the user's config.pbtxt byte for byte, a model that had none without one."""
from __future__ import annotations

from statistics import mean

import pytest

from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import HEADLINE, ABPlan, Arm, run_ab
from app.experiments.driving import Start
from app.experiments.sweep.space import Choice, SearchSpace
from app.store.database import DONE, FAILED, Study
from app.experiments.sweep.sweeper import SweepOptions, run_sweep
from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from loadgen.stats import ALL
from tests.third_party import embedded_lab_on_a_copy

QUICK = SweepOptions(window_s=0.5, warmup_reload_s=0.3, warmup_load_s=0.2, max_windows=4,
                     recheck_top=1)  # the best measured again before it is named: one point more, not three


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A lab whose embedded server serves a copy of the third-party repository (its state in a temp folder)."""
    with embedded_lab_on_a_copy(tmp_path_factory.mktemp("third-party-studies")) as lab:
        yield lab


def file_bytes(lab, model: str) -> bytes | None:
    """Return the model's config.pbtxt as bytes, None when it has none."""
    path = lab.server_facts().repository / model / "config.pbtxt"
    return path.read_bytes() if path.exists() else None


def summary(points) -> dict:
    """Return what each point measured, for failure messages."""
    return {p.key: (p.status, round(p.throughput or 0), p.p99 and round(p.p99, 1), p.get("ok"), p.get("failed"),
                    p.note[:120]) for p in points}


@pytest.mark.parametrize("model", ["py_auto", "text_len"])
def test_a_sweep_reaches_an_operating_point_and_the_model_ends_as_it_started(lab, model):
    """py_auto has no config.pbtxt (Triton auto-completes it); text_len's has a licence header and comments."""
    before, served = file_bytes(lab, model), lab.served_config(model)
    space = SearchSpace(model=model, instances=(1, 2), delays_us=(0, 2000), include_default=False,
                        loads=(1, 4), p99_budget_ms=1000.0, adaptive=False)
    result = run_sweep(lab, space, label=f"{model} third-party sweep", options=QUICK)
    got = summary(result.points)
    print(model, f"{result.wall_s:.1f} s", result.note, got)
    assert result.status == DONE, (result.note, got)
    # both serve 1 instance with no queue delay at the start: that configuration is named so, and measured once
    assert sorted(p.key for p in result.points) == sorted(f"i{i}-d{d}{'-start' * ((i, d) == (1, 0))}@{c}"
                                                          for i in (1, 2) for d in (0, 2000) for c in (1, 4)), got
    assert all(p.status == DONE and p.get("failed") == 0 and p.get("ok") > 0 for p in result.points), got
    assert result.best is not None, got
    for p in result.points:  # each point was measured on its own configuration, the user's text edited in place
        config = parse_config(p.config_text)
        count = config.instance_group[0].count if config.instance_group else 1  # none written: Triton serves 1
        assert count == p.choice.instances, (p.key, p.config_text)
        assert config.dynamic_batching.max_queue_delay_microseconds == p.choice.delay_us, (p.key, p.config_text)
        if before is not None:
            assert p.config_text.startswith(before.decode().split("\n")[0]), p.config_text
    assert file_bytes(lab, model) == before, f"{model}/config.pbtxt did not end as it started"
    assert lab.served_config(model) == served, "the starting config does not serve again"
    assert lab.study(result.study_id).status == DONE and not lab.traffic().running


def test_an_ab_on_a_model_without_config_pbtxt_reaches_a_verdict_and_leaves_no_file(lab):
    """The serving config (auto-completed) against the same with a 2 ms queue delay, at 40 req/s: requests ~25 ms
    apart mostly wait out B's delay alone, so B's median is higher by about the delay."""
    served = lab.served_config("py_auto")
    arms = (Arm("A", lab.served_text("py_auto")),  # what the page offers as "serving now"
            Arm("B", format_config(Choice(delay_us=2000).config(served))))
    spec = spec_to_dict(LoadSpec(mode=Mode.OPEN, rate=40.0, model="py_auto", seed=7))
    result = run_ab(lab, ABPlan("py_auto", arms, spec, trials=2, trial_s=2.0, warmup_s=0.5))
    p50 = {a: [round(v, 2) for v in result.values(a, "p50_ms") if v is not None] for a in ("A", "B")}
    rows = [f.figures.row() for per in result.trials.values() for f in per.values()]
    print(f"{result.wall_s:.1f} s", result.note, p50, result.verdict("B"))
    assert result.status == DONE, result.note
    assert len(rows) == 4 and all(r.failed == 0 and r.ok > 0 for r in rows), rows
    diffs = {d.key: d for cls, d in result.differences("B") if cls == ALL}
    assert set(HEADLINE) <= set(diffs) and all(diffs[k].n == 2 for k in HEADLINE), diffs
    assert result.verdict("B").startswith("B "), result.verdict("B")
    assert mean(p50["B"]) - mean(p50["A"]) > 1.0, f"B's 2 ms queue delay did not show in its median: {p50}"
    assert file_bytes(lab, "py_auto") is None, "the comparison left a config.pbtxt behind"
    assert lab.served_config("py_auto") == served


def test_a_configuration_triton_refuses_is_a_failed_point_and_the_sweep_goes_on(lab):
    """py_auto's auto_complete_config refuses max_batch_size 16: that point fails with Triton's reason, and max batch
    8 — what py_auto serves at the start, so the default too: one configuration, measured once under the starting
    config's name — is measured after it without a reload: the refused reload's marker is the sweep's own, not
    someone else's change interrupting it."""
    served = lab.served_config("py_auto")
    space = SearchSpace(model="py_auto", instances=(1,), delays_us=(), max_batch_sizes=(8, 16), include_default=True,
                        loads=(2,), p99_budget_ms=1000.0, adaptive=False)
    result = run_sweep(lab, space, label="refused in the middle", options=QUICK)
    got = summary(result.points)
    print(f"{result.wall_s:.1f} s", result.note, got)
    assert result.status == DONE, (result.note, got)
    by_key = {p.key: p for p in result.points}
    assert {k: p.status for k, p in by_key.items()} == {"i1-b16@2": FAILED, "i1-b8-start@2": DONE}, got
    assert "max_batch_size" in by_key["i1-b16@2"].note, got
    assert by_key["i1-b8-start@2"].get("failed") == 0 and by_key["i1-b8-start@2"].get("ok") > 0, got
    assert file_bytes(lab, "py_auto") is None and lab.served_config("py_auto") == served


def test_a_sweep_offering_batching_to_a_model_without_a_batch_dimension_fails_with_the_reason(lab):
    """two_inputs has max_batch_size 0: no queue delay can be applied, so the sweep fails — saying why — without
    measuring the default alone, and the user's config is untouched."""
    before, served = file_bytes(lab, "two_inputs"), lab.served_config("two_inputs")
    space = SearchSpace(model="two_inputs", instances=(1, 2), delays_us=(0, 2000), loads=(1,), p99_budget_ms=1000.0)
    result = run_sweep(lab, space, label="batching offered to an unbatched model", options=QUICK)
    study = lab.study(result.study_id)
    got = summary(result.points)
    print(f"{result.wall_s:.1f} s", study.status, study.note, got)
    assert result.status == FAILED and study.status == FAILED, (study.status, study.note)
    assert "needs max_batch_size > 0" in study.note, study.note
    assert sorted(got) == ["i1-d0@1", "i1-d2000@1", "i2-d0@1", "i2-d2000@1"], got  # the default was not measured
    assert all(p.status == FAILED and "needs max_batch_size > 0" in p.note for p in result.points), got
    assert file_bytes(lab, "two_inputs") == before and lab.served_config("two_inputs") == served
    assert not lab.traffic().running


def test_a_study_stored_before_its_start_was_recorded_reads_as_a_file_it_wrote_back():
    old = Study("sweep", "old", "m", {"space": {}}, 0.0, base_config='name: "m"\n')
    assert Start.of(old) == Start('name: "m"\n', 'name: "m"\n', True)
    new = Study("sweep", "new", "m", {"start": Start("", 'name: "m"\nmax_batch_size: 8\n', False).to_dict()}, 0.0,
                base_config='name: "m"\nmax_batch_size: 8\n')
    assert Start.of(new).had_file is False and Start.of(new).served.endswith("max_batch_size: 8\n")
