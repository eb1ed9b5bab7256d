"""Arms defined on the spot (pure): knob assignments over a serving config, or a pasted config.pbtxt."""
from __future__ import annotations

import pytest

from app.config.model_config import format_config, parse_config
from app.config.read import settings_of
from app.config.settings import DynamicBatching, ModelSettings, QueuePolicy
from app.experiments.ab.arms import KNOBS, define, from_knobs, from_text, parse_assignments, summary
from app.config.knobs import apply_knobs

# A user's file: a licence header, comments, a field order of their own (no lab.json, not a lab model).
USER_FILE = """# Copyright 2026 Example Corp.
name: "ranker"
backend: "python"
max_batch_size: 16  # the clients' largest batch
input [ { name: "X", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 500  # tuned last spring
}
"""
# What Triton serves for it: the file with its defaults filled in (as get_model_config shows it).
SERVED = parse_config(USER_FILE + 'platform: "python"\nversion_policy { latest { num_versions: 1 } }\n')
UNBATCHED = parse_config('name: "pair"\nbackend: "python"\nmax_batch_size: 0\ninstance_group { count: 1 }\n')
STATEFUL = parse_config('name: "acc"\nbackend: "python"\nmax_batch_size: 8\ninstance_group { count: 1 }\n'
                        'sequence_batching { max_sequence_idle_microseconds: 5000000 }\n')


# --- typing knobs ------------------------------------------------------------------------------------------------
def test_assignments_read_as_typed_with_spaces_semicolons_and_lists():
    got = parse_assignments(" delay_us = 5000  instances=2; preferred=8, 4 dynamic=on ")
    assert got == {"max_queue_delay_microseconds": 5000, "instance_count": 2, "preferred_batch_size": (4, 8),
                   "dynamic_batching": True}, got


def test_aliases_units_and_the_serving_config():
    assert parse_assignments("delay_ms=2.5") == {"max_queue_delay_microseconds": 2500}
    assert parse_assignments("max_queue_delay_microseconds=7 instance_count=3") == {
        "max_queue_delay_microseconds": 7, "instance_count": 3}
    assert parse_assignments("preferred=none dynamic=off") == {"preferred_batch_size": (), "dynamic_batching": False}
    assert parse_assignments("serving") == {} and parse_assignments("  ") == {}


@pytest.mark.parametrize("typed, words", [
    ("delay=500", "unknown knob 'delay': did you mean delay_us?"),
    ("colour=red", "unknown knob 'colour': known: instances, max_batch_size"),
    ("delay_us", "'delay_us' is not an assignment: write knob=value"),
    ("delay_us=-1", "delay_us='-1' must be a whole number of µs from 0 to 10,000,000"),
    ("delay_us=fast", "delay_us='fast' must be a whole number of µs"),
    ("delay_us=nan", "delay_us='nan' must be a whole number of µs"),
    ("delay_ms=10001", "delay_ms='10001' must be a number of ms from 0 to 10,000"),
    ("instances=0", "instances='0' must be a whole number from 1 to 64"),
    ("instances=1.5", "instances='1.5' must be a whole number from 1 to 64"),
    ("max_batch_size=5000", "max_batch_size='5000' must be a whole number from 0 to 4,096"),
    ("preferred=0,8", "preferred='0,8': each size must be a whole number from 1 to 4,096"),
    ("preferred=4,4", "preferred='4,4': a size is listed twice"),
    ("preferred=1,2,3,4,5,6,7,8,9", "at most 8 preferred sizes"),
    ("dynamic=maybe", "dynamic='maybe': say on or off"),
    ("priority_levels=65", "priority_levels='65' must be a whole number from 0 to 64"),
    ("delay_us=1 delay_ms=2", "delay_ms sets delay_us's knob again: give each knob once"),
])
def test_a_wrong_knob_or_value_is_refused_naming_it_and_what_fits(typed, words):
    with pytest.raises(ValueError) as refused:
        parse_assignments(typed)
    assert words in str(refused.value), str(refused.value)


def test_a_forms_mapping_is_held_to_the_same_ranges():
    arm = from_knobs(SERVED, {"instance_count": 2, "max_queue_delay_microseconds": 100, "dynamic_batching": True,
                              "preferred_batch_size": [8, 4]})
    assert arm.name == "instances 1 → 2, delay 500 → 100 µs", arm.name
    with pytest.raises(ValueError, match="instances='0' must be a whole number from 1 to 64"):
        from_knobs(SERVED, {"instance_count": 0})
    with pytest.raises(ValueError, match="unknown knob 'delay'"):
        from_knobs(SERVED, {"delay": 5})


def test_every_knob_is_one_app_knobs_takes():
    from app.config.knobs import KNOBS as APP_KNOBS

    assert {k.knob for k in KNOBS.values()} <= set(APP_KNOBS)


# --- an arm from knobs -------------------------------------------------------------------------------------------
def test_an_arm_says_what_it_changes_and_edits_only_that_in_the_users_file():
    arm = from_knobs(SERVED, "delay_us=5000", USER_FILE)
    assert arm.name == "delay 500 → 5000 µs" and arm.changes == ("delay 500 → 5000 µs",)
    assert arm.config.dynamic_batching.max_queue_delay_microseconds == 5000
    assert arm.config.version_policy == SERVED.version_policy, "the served fields the knob does not touch stay"
    assert arm.text == USER_FILE.replace("500  # tuned", "5000  # tuned"), arm.text
    two = from_knobs(SERVED, "instances=2 preferred=8 max_batch_size=8", USER_FILE)
    assert two.name == "instances 1 → 2, max batch 16 → 8, preferred [4, 8] → [8]", two.name
    assert "# the clients' largest batch" in two.text and settings_of(parse_config(two.text)) == settings_of(two.config)


def test_without_a_file_the_arm_is_the_served_config_written_out():
    arm = from_knobs(SERVED, "instances=3")
    assert parse_config(arm.text) == arm.config and arm.config.instance_group[0].count == 3
    assert arm.text == format_config(arm.config)


def test_the_serving_config_is_named_by_what_it_is():
    arm = from_knobs(SERVED, "serving", USER_FILE)
    assert arm.name == "1 instance, max batch 16, delay 500 µs, preferred [4, 8] (serving)", arm.name
    assert arm.text == USER_FILE and arm.changes == ()
    same = from_knobs(SERVED, "delay_us=500", USER_FILE)  # a knob set to what serves changes nothing
    assert same.name.endswith("(serving)") and same.text == USER_FILE


def test_switching_dynamic_batching_off_and_priorities_on():
    off = from_knobs(SERVED, "dynamic=off")
    assert off.name == "dynamic batching off" and not off.config.HasField("dynamic_batching")
    prio = from_knobs(SERVED, "priority_levels=2")
    db = prio.config.dynamic_batching
    assert (db.priority_levels, db.default_priority_level) == (2, 2), "unmarked requests take the lowest level"
    assert prio.name == "priority levels 0 → 2, default priority 0 → 2", prio.name
    high = from_knobs(SERVED, "priority_levels=3 default_priority=1")
    assert high.config.dynamic_batching.default_priority_level == 1


@pytest.mark.parametrize("served, typed, words", [
    (UNBATCHED, "delay_us=2000", "pair has max_batch_size 0 (it cannot batch): delay_us needs max_batch_size > 0; "
                                 "add max_batch_size=N — a contract change"),
    (UNBATCHED, "dynamic=on", "dynamic=on needs max_batch_size > 0"),
    (STATEFUL, "delay_us=100", "acc uses sequence batching (a stateful model): delay_us would replace it"),
    (SERVED, "preferred=32", "preferred sizes [32] are above max_batch_size 16: lower them or set max_batch_size=32"),
    (SERVED, "max_batch_size=4", "preferred sizes [8] are above max_batch_size 4: add preferred=… within 4"),
    (SERVED, "max_batch_size=0", "max_batch_size=0 (no batching) leaves dynamic batching on: add dynamic=off"),
    (SERVED, "dynamic=off delay_us=5", "dynamic=off leaves nothing for delay_us to set"),
    (SERVED, "priority_levels=2 default_priority=3", "default_priority=3 must be a level from 1 to 2"),
    (SERVED, "default_priority=1", "default_priority=1 needs priority levels: add priority_levels=1 or more"),
    (SERVED, "priority_levels=2 preserve_ordering=on", "preserve_ordering=on allows one priority level, not 2"),
])
def test_knobs_the_model_cannot_take_are_refused_with_the_way_out(served, typed, words):
    with pytest.raises(ValueError) as refused:
        from_knobs(served, typed)
    assert words in str(refused.value), str(refused.value)


def test_the_way_out_works():
    batched = from_knobs(UNBATCHED, "max_batch_size=8 delay_us=2000")
    assert batched.name == "max batch 0 → 8, dynamic batching on, delay 0 → 2000 µs", batched.name
    switched = from_knobs(STATEFUL, "dynamic=on delay_us=100")
    assert not switched.config.HasField("sequence_batching") and "sequence batching off" in switched.name
    unpreferred = from_knobs(SERVED, "max_batch_size=4 preferred=none")
    assert list(unpreferred.config.dynamic_batching.preferred_batch_size) == []


# --- a pasted config.pbtxt ---------------------------------------------------------------------------------------
def test_a_pasted_config_is_taken_as_written_and_named_by_its_knobs():
    pasted = USER_FILE.replace("max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: 2000")
    arm = from_text(SERVED, pasted)
    assert arm.text == pasted and arm.name == "pasted: delay 500 → 2000 µs", arm.name
    bare = from_text(SERVED, 'max_batch_size: 16\ndynamic_batching { preferred_batch_size: [ 4, 8 ] }\n')
    assert bare.name == "pasted: delay 500 → 0 µs", "no instance_group written: Triton fills it in as now"
    assert from_text(SERVED, USER_FILE).name == "pasted: no knob differs from serving"


@pytest.mark.parametrize("text, words", [
    ('name: "other"\nmax_batch_size: 4\n', "the pasted config.pbtxt is for model 'other', not 'ranker'"),
    ("max_batch_size: [", "the pasted config.pbtxt is not a valid Triton model config"),
    ("dynamic_batching { delay: 5 }", "the pasted config.pbtxt is not a valid Triton model config"),
    ("#" * (256 * 1024 + 1) + "\nmax_batch_size: 1", "a config.pbtxt edited or applied here may have at most"),
])
def test_a_pasted_config_that_cannot_serve_this_model_is_refused(text, words):
    with pytest.raises(ValueError) as refused:
        from_text(SERVED, text)
    assert words in str(refused.value), str(refused.value)


def test_define_tells_a_config_from_assignments():
    assert define(SERVED, "delay_us=10").name == "delay 500 → 10 µs"
    assert define(SERVED, "max_batch_size: 16").name.startswith("pasted: ")


# --- knob words and the knobs added to app.config.knobs -----------------------------------------------------------------
def test_summary_in_knob_words():
    assert summary(settings_of(UNBATCHED)) == "1 instance, no batching"
    assert summary(settings_of(STATEFUL)) == "1 instance, max batch 8, sequence batching"
    assert summary(settings_of(from_knobs(SERVED, "priority_levels=2 instances=2").config)) == (
        "2 instances, max batch 16, delay 500 µs, preferred [4, 8], 2 priority levels")


def test_priority_knobs_keep_tritons_rules():
    policy = QueuePolicy(max_queue_size=4)
    base = ModelSettings(max_batch_size=8, dynamic_batching=DynamicBatching(
        priority_levels=3, default_priority_level=3, priority_queue_policies=((1, policy), (3, policy))))
    fewer = apply_knobs(base, {"priority_levels": 2}).dynamic_batching
    assert (fewer.priority_levels, fewer.default_priority_level) == (2, 2)
    assert fewer.priority_queue_policies == ((1, policy),), "a policy past the last level goes"
    none = apply_knobs(base, {"priority_levels": 0}).dynamic_batching
    assert (none.priority_levels, none.default_priority_level, none.priority_queue_policies) == (0, 0, ())
    kept = apply_knobs(base, {"priority_levels": 4}).dynamic_batching
    assert kept.default_priority_level == 3, "a default inside the new levels stays"
    assert apply_knobs(ModelSettings(max_batch_size=8), {"preserve_ordering": True}).dynamic_batching.preserve_ordering
