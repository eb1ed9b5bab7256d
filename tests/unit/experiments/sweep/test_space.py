"""Search spaces: the configurations they name, their keys, and the configs they build."""
from __future__ import annotations

import pytest

from app.config.model_config import read_config
from app.config.read import dynamic_batching_of, instance_groups_of
from app.experiments.sweep.space import CONCURRENCY, RATE, Choice, SearchSpace
from app.paths import MODEL_REPOSITORY


def test_the_grid_has_every_combination_and_the_default_last():
    space = SearchSpace(instances=(2, 1), delays_us=(0, 2000))
    assert [c.key for c in space.choices()] == ["i1-d0", "i1-d2000", "i2-d0", "i2-d2000", "default"]
    assert space.points() == 5 * 5
    assert [c.key for c in SearchSpace(instances=(1,), delays_us=(), include_default=False).choices()] == ["i1"]


@pytest.mark.parametrize("choice", [Choice(), Choice(2, 16, (4, 8), 500), Choice(preferred=()), Choice(delay_us=0),
                                    Choice(1, delay_us=500, start=True), Choice(start=True)])
def test_a_key_names_its_choice_exactly(choice):
    assert Choice.from_key(choice.key) == choice


def test_a_choice_changes_only_its_knobs_and_drops_preferred_sizes_above_the_max():
    base = read_config(MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt")
    config = Choice(instances=3, max_batch_size=4, delay_us=100).config(base)
    assert instance_groups_of(config)[0].count == 3 and config.max_batch_size == 4
    dyn = dynamic_batching_of(config)
    assert dyn.max_queue_delay_microseconds == 100 and dyn.preferred_batch_sizes == (4,)
    assert config.parameters == base.parameters and config.input == base.input
    assert Choice().config(base) == base


def test_a_config_offered_twice_is_one_configuration_and_the_starting_config_is_named_by_what_it_is():
    """gpu_sim's config: 1 instance, max batch 32, preferred sizes 4 and 8, a 500 µs delay."""
    base = read_config(MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt")
    got = SearchSpace(instances=(1, 2), delays_us=(0, 500)).configurations(base)
    print([(c.key, c.label) for c in got])
    assert [c.key for c in got] == ["i1-d0", "i2-d0", "i2-d500", "i1-d500-start"], (
        "'1 instance, delay 500 µs' and the default are the starting config: one configuration, last")
    assert got[-1].label == "1 instance, delay 500 µs (serving at start)" and got[-1].config(base) == base
    assert SearchSpace(instances=(1, 2), delays_us=(0, 500)).offers_start(base), "offered by its values"
    assert not SearchSpace(instances=(2,), delays_us=(0,)).offers_start(base), "only as the default"
    twice = SearchSpace(instances=(), delays_us=(), max_batch_sizes=(8,), preferred=((16,), (32,)),
                        include_default=False)
    assert [c.key for c in twice.configurations(base)] == ["b8-p16"], "preferred 16 and 32 are dropped under batch 8"
    assert [c.key for c in SearchSpace(instances=(2,), delays_us=(0,), include_default=False).configurations(base)] == [
        "i2-d0"], "the starting config is measured only when asked for or offered"
    alone = SearchSpace(instances=(), delays_us=(), max_batch_sizes=(32,)).configurations(base)
    assert [c.label for c in alone] == ["max batch 32 (serving at start)"]
    nothing = SearchSpace(instances=(), delays_us=()).configurations(base)
    assert [c.label for c in nothing] == ["1 instance, delay 500 µs (serving at start)"]


def test_a_choice_that_cannot_be_built_is_kept_to_fail_with_its_reason():
    base = read_config(MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt")
    base.max_batch_size = 0
    base.ClearField("dynamic_batching")
    got = SearchSpace(instances=(1,), delays_us=(0, 2000)).configurations(base)
    assert [c.key for c in got] == ["i1-d0", "i1-d2000", "i1-start"], [c.key for c in got]
    assert got[-1].label == "1 instance (serving at start)"  # no dynamic batching: no delay to name


def test_the_sla_needs_p99_within_budget_and_the_throughput_floor():
    space = SearchSpace(p99_budget_ms=20.0, min_throughput_rps=100.0)
    assert space.meets_sla(19.9, 150.0) and not space.meets_sla(20.1, 150.0) and not space.meets_sla(10.0, 99.0)
    assert not space.meets_sla(None, 150.0)


@pytest.mark.parametrize("bad, words", [
    ({"loads": ()}, "at least one load"), ({"loads": (1.5,)}, "whole number"), ({"load_kind": "x"}, "load_kind"),
    ({"instances": (0,)}, "instance counts"), ({"p99_budget_ms": 0}, "budget"),
    ({"load_kind": RATE, "loads": (50_000,)}, "falls behind its schedule"),
    ({"instances": tuple(range(1, 21)), "delays_us": tuple(range(21)), "loads": (1, 2)}, "between 1 and 400"),
])
def test_a_space_that_cannot_run_says_why(bad, words):
    with pytest.raises(ValueError, match=words):
        SearchSpace(**bad)


def test_a_space_round_trips_through_its_dict():
    space = SearchSpace(instances=(1, 4), preferred=((4, 8),), load_kind=RATE, loads=(100, 200), min_throughput_rps=5)
    assert SearchSpace.from_dict(space.to_dict()) == space


NAN, INF = float("nan"), float("inf")


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
