"""Validation: every rule names its field and the fix; shipped configs pass."""
from __future__ import annotations


import pytest
from tritonclient.grpc import model_config_pb2 as pb

from app.config import (
    ConfigParseError, ConfigValidationError, DynamicBatching, InstanceGroup, Kind, ModelSettings, QueuePolicy,
    contract_changes,
    SequenceBatching, ServerCaps, from_json, parse_config,
    copy_config, disable_dynamic_batching, problems, read_config, set_dynamic_batching, set_instance_group,
    set_max_batch_size, set_sequence_batching, validate,
)
from app.paths import MODEL_REPOSITORY
from tests.unit.config.shipped import SHIPPED, THIRD_PARTY, pristine, shipped_id


GPU = pristine("gpu_sim")
SEQ = pristine("stream_acc")


def _named(name):
    config = copy_config(GPU)
    config.name = name
    return config


def _dims(config, dims):
    config = copy_config(config)
    config.input[0].dims[:] = dims
    return config


def _db(**kw):
    return set_dynamic_batching(GPU, DynamicBatching(**kw))


def _control_clash():
    config = copy_config(SEQ)
    config.sequence_batching.control_input[0].name = "INPUT"
    return config


def _raw_gpus(gpus, kind=Kind.GPU):
    config = copy_config(GPU)  # written raw: InstanceGroup itself refuses negative GPUs
    config.instance_group[0].kind = pb.ModelInstanceGroup.Kind.Value(kind.value)
    config.instance_group[0].gpus[:] = gpus
    return config


# case: (config, gpu_count, field, words the message must contain)
CASES = {
    "preferred_above_max": (_db(preferred_batch_sizes=(4, 64)), 0, "dynamic_batching.preferred_batch_size",
                            "above max_batch_size 32"),
    "preferred_zero": (_db(preferred_batch_sizes=(0,)), 0, "dynamic_batching.preferred_batch_size",
                       "1..max_batch_size"),
    "dynamic_without_batching": (set_max_batch_size(_db(), 0), 0, "dynamic_batching", "max_batch_size > 0"),
    "sequence_preferred_above_max": (set_sequence_batching(SEQ, SequenceBatching(preferred_batch_sizes=(16,))), 0,
                                     "sequence_batching.oldest.preferred_batch_size", "above max_batch_size 8"),
    "default_priority_above_levels": (_db(priority_levels=2, default_priority_level=3), 0,
                                      "dynamic_batching.default_priority_level", "1..2"),
    "default_priority_zero": (_db(priority_levels=2), 0, "dynamic_batching.default_priority_level", "1..2"),
    "default_priority_without_levels": (_db(default_priority_level=1), 0, "dynamic_batching.default_priority_level",
                                        "set priority_levels"),
    "policy_level_out_of_range": (_db(priority_levels=2, default_priority_level=1,
                                      priority_queue_policies={3: QueuePolicy()}), 0,
                                  "dynamic_batching.priority_queue_policy", "level 3; use 1..2"),
    "policy_without_levels": (_db(priority_queue_policies={1: QueuePolicy()}), 0,
                              "dynamic_batching.priority_queue_policy", "set priority_levels first"),
    "preserve_ordering_with_priorities": (_db(preserve_ordering=True, priority_levels=2, default_priority_level=1), 0,
                                          "dynamic_batching.preserve_ordering", "turn preserve_ordering off"),
    "negative_max_batch_size": (set_max_batch_size(disable_dynamic_batching(GPU), -1), 0, "max_batch_size", "is -1"),
    "absurd_max_batch_size": (set_max_batch_size(GPU, 5000), 0, "max_batch_size", "past 4096"),
    "absurd_instances": (set_instance_group(GPU, InstanceGroup(65)), 0, "instance_group[0].count", "1..64"),
    "zero_instances": (set_instance_group(GPU, InstanceGroup(0)), 0, "instance_group[0].count", "1..64"),
    "absurd_delay": (_db(max_queue_delay_microseconds=10_000_001), 0,
                     "dynamic_batching.max_queue_delay_microseconds", "past 10 s"),
    "absurd_sequence_idle": (set_sequence_batching(SEQ, SequenceBatching(max_sequence_idle_microseconds=10**13)), 0,
                             "sequence_batching.max_sequence_idle_microseconds", "lower it"),
    "absurd_priority_levels": (_db(priority_levels=100, default_priority_level=1), 0,
                               "dynamic_batching.priority_levels", "0..64"),
    "absurd_timeout": (_db(default_queue_policy=QueuePolicy(default_timeout_microseconds=10**13)), 0,
                       "dynamic_batching.default_queue_policy.default_timeout_microseconds", "lower it"),
    "gpu_kind_without_gpu": (set_instance_group(GPU, InstanceGroup(1, Kind.GPU)), 0, "instance_group[0].kind",
                             "use KIND_CPU"),
    "gpus_listed_without_gpu": (_raw_gpus([0], Kind.AUTO), 0, "instance_group[0].gpus", "server has none"),
    "gpus_on_cpu_group": (_raw_gpus([0], Kind.CPU), 1, "instance_group[0].gpus", "KIND_CPU"),
    "gpu_index_past_count": (_raw_gpus([0, 2]), 2, "instance_group[0].gpus", "GPU 2 does not exist"),
    "negative_gpu_index": (_raw_gpus([-1]), 2, "instance_group[0].gpus", "GPU -1 does not exist"),
    "unknown_model": (_named("resnet"), 0, "name", "not in the repository"),
    "model_name_is_a_path": (_named("../gpu_sim"), 0, "name", "no '/'"),
    "empty_model_name": (_named(""), 0, "name", "is empty"),
    "control_input_clashes_with_input": (_control_clash(), 0, "sequence_batching.control_input", "rename"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_rule_names_the_field_and_the_fix(case):
    config, gpus, field, words = CASES[case]
    with pytest.raises(ConfigValidationError) as info:
        validate(config, ServerCaps.of_repository(MODEL_REPOSITORY, gpu_count=gpus))
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith(field)


@pytest.mark.parametrize("path", [p for p in SHIPPED if p.parent.name != "configs"], ids=shipped_id)
def test_shipped_cpu_configs_pass_on_a_cpu_server(path, caps):
    validate(read_config(path), caps)


@pytest.mark.parametrize("path", [p for p in SHIPPED if p.parent.name == "configs"], ids=shipped_id)
def test_gpu_variants_need_a_gpu(path, caps):
    with pytest.raises(ConfigValidationError, match="KIND_GPU but the server has no GPU"):
        validate(read_config(path), caps)
    validate(read_config(path), ServerCaps.of_repository(MODEL_REPOSITORY, gpu_count=1))


def test_decoupled_is_allowed_for_any_model(caps):
    config = copy_config(GPU)  # stateless, not a token generator: the lab drives it over a gRPC stream
    config.model_transaction_policy.decoupled = True
    assert problems(config, caps) == []
    fanout = THIRD_PARTY / "fanout"  # a third-party decoupled model: N responses for an input N
    validate(read_config(fanout / "config.pbtxt"), ServerCaps.of_repository(fanout.parent, gpu_count=0))


def _enum(edit, model=GPU):
    config = copy_config(model)
    edit(config)
    return config


def _control_kind(config):
    config.sequence_batching.control_input[1].control[0].kind = 9


def _warmup_type(config):
    warm = config.model_warmup.add(name="w", batch_size=1, count=1)
    warm.inputs["INPUT"].data_type = 77
    warm.inputs["INPUT"].zero_data = True


# case: (config, field, the valid names the message must offer)
ENUMS = {
    "instance kind": (_enum(lambda c: setattr(c.instance_group[0], "kind", 99)), "instance_group[0].kind", 99,
                      "KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL"),
    "input data type": (_enum(lambda c: setattr(c.input[0], "data_type", 999)), "input[0].data_type", 999,
                        "TYPE_FP32"),
    "output data type": (_enum(lambda c: setattr(c.output[0], "data_type", -3)), "output[0].data_type", -3,
                         "TYPE_STRING"),
    "input format": (_enum(lambda c: setattr(c.input[0], "format", 5)), "input[0].format", 5, "FORMAT_NCHW"),
    "timeout action": (_enum(lambda c: setattr(c.dynamic_batching.default_queue_policy, "timeout_action", 7)),
                       "dynamic_batching.default_queue_policy.timeout_action", 7, "REJECT, DELAY"),
    "priority policy action": (_enum(lambda c: (setattr(c.dynamic_batching, "priority_levels", 2),
                                                setattr(c.dynamic_batching, "default_priority_level", 1),
                                                setattr(c.dynamic_batching.priority_queue_policy[2],
                                                        "timeout_action", 4))),
                               "dynamic_batching.priority_queue_policy[2].timeout_action", 4, "REJECT, DELAY"),
    "control kind": (_enum(_control_kind, SEQ), "sequence_batching.control_input[1].control[0].kind", 9,
                     "CONTROL_SEQUENCE_START"),
    "warm-up input type": (_enum(_warmup_type), "model_warmup[0].inputs['INPUT'].data_type", 77, "TYPE_FP32"),
    "optimization priority": (_enum(lambda c: setattr(c.optimization, "priority", 8)), "optimization.priority", 8,
                              "PRIORITY_MAX"),
}


@pytest.mark.parametrize("case", ENUMS)
def test_an_enum_number_out_of_range_is_named_with_the_valid_names(case, caps):
    config, field, number, names = ENUMS[case]
    found = [p for p in problems(config, caps) if p.field == field]
    assert found, problems(config, caps)
    assert f"is {number}," in found[0].message and names in found[0].message, found[0].message
    with pytest.raises(ConfigValidationError) as info:
        validate(config, caps)
    assert field in str(info.value)


def test_an_enum_number_written_in_config_pbtxt_is_caught_and_does_not_crash_the_contract_check(caps):
    text = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()
    config = parse_config(text.replace("data_type: TYPE_FP32", "data_type: 999", 1).replace("KIND_CPU", "99"))
    assert [p.field for p in problems(config, caps)][:2] == ["input[0].data_type", "instance_group[0].kind"]
    changes = {c.field: c for c in contract_changes(GPU, config)}
    assert changes["input 'INPUT'"].after == "999 (not a DataType) [256]", changes
    assert changes["instance kinds"].after == "99 (not a ModelInstanceGroup.Kind)", changes
    start = next(c for c in ENUMS["control kind"][0].sequence_batching.control_input if c.name == "END")
    assert start.control[0].kind == 9
    controls = {c.field: c for c in contract_changes(SEQ, ENUMS["control kind"][0])}["sequence control inputs"]
    assert "END=9 (not a ModelSequenceBatching.Control.Kind)[0, 1]" in controls.after, controls


def test_all_problems_are_collected_in_one_error(caps):
    config = set_instance_group(_db(preferred_batch_sizes=(64,), max_queue_delay_microseconds=20_000_000),
                                InstanceGroup(100, Kind.GPU))
    found = problems(config, caps)
    assert [p.field for p in found] == [
        "instance_group[0].count", "instance_group[0].kind",
        "dynamic_batching.preferred_batch_size", "dynamic_batching.max_queue_delay_microseconds",
    ]
    with pytest.raises(ConfigValidationError) as info:
        validate(config, caps)
    assert info.value.problems == tuple(found)
    assert info.value.field == "instance_group[0].count"


def test_remote_caps_check_names_without_a_repository():
    caps = ServerCaps(0, frozenset({"gpu_sim"}))
    validate(GPU, caps)
    with pytest.raises(ConfigValidationError, match="is a path"):
        validate(_named("a/gpu_sim"), caps)
    with pytest.raises(ConfigValidationError, match="not on the server; use one of: gpu_sim"):
        validate(_named("mlp"), caps)


def test_sequence_batching_without_batching_is_allowed(caps):
    config = set_max_batch_size(set_sequence_batching(SEQ, SequenceBatching(max_candidate_sequences=4)), 0)
    config = _dims(config, [1])
    assert problems(config, caps) == []


def test_dynamic_and_sequence_batching_together_are_refused():
    with pytest.raises(ConfigValidationError, match="keep one") as info:
        ModelSettings(32, dynamic_batching=DynamicBatching(), sequence_batching=SequenceBatching())
    assert info.value.field == "dynamic_batching"
    text = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text() + "sequence_batching {\n}\n"
    with pytest.raises(ConfigParseError, match="set together with sequence_batching; keep one"):
        parse_config(text)
    with pytest.raises(ConfigParseError, match="keep one"):
        from_json({"name": "gpu_sim", "dynamic_batching": {}, "sequence_batching": {}})


def test_setting_one_batcher_drops_the_other():
    assert not set_sequence_batching(GPU, SequenceBatching()).HasField("dynamic_batching")
    assert not set_dynamic_batching(SEQ, DynamicBatching()).HasField("sequence_batching")
