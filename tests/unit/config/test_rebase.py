"""Rebasing the user's move from the served config onto the file: only what the user changed reaches the file."""
from __future__ import annotations


import pytest
from tritonclient.grpc import model_config_pb2 as pb

from app.config.model_config import copy_config, from_json, parse_config
from app.config.rebase import rebase
from app.config.text_edit import patch_text
from tests.unit.config.shipped import THIRD_PARTY


# Served configs written the way Triton 2.51 completes these files (GET /v2/models/M/config): version policy,
# tensor formats, optimization defaults, named instance groups, preferred_batch_size set to max_batch_size when
# dynamic batching lists none, default_model_filename.
_OPTIMIZATION = {"priority": "PRIORITY_DEFAULT", "input_pinned_memory": {"enable": True},
                 "output_pinned_memory": {"enable": True}}
_COMMON = {"backend": "python", "version_policy": {"latest": {"num_versions": 1}}, "optimization": _OPTIMIZATION,
           "default_model_filename": "model.py"}
PY_AUTO = {"name": "py_auto", **_COMMON, "max_batch_size": 8,
           "input": [{"name": "INPUT", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [4]}],
           "output": [{"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [4]}],
           "dynamic_batching": {"preferred_batch_size": [8]},
           "instance_group": [{"name": "py_auto", "kind": "KIND_CPU", "count": 1}]}
TEXT_LEN = {"name": "text_len", **_COMMON, "max_batch_size": 16,
            "input": [{"name": "TEXT", "data_type": "TYPE_STRING", "format": "FORMAT_NONE", "dims": [1]}],
            "output": [{"name": "LENGTH", "data_type": "TYPE_INT32", "dims": [1]}],
            "dynamic_batching": {"preferred_batch_size": [16]},
            "instance_group": [{"name": "text_len", "kind": "KIND_CPU", "count": 1}]}
VAR_DIMS = {"name": "var_dims", **_COMMON, "max_batch_size": 8,
            "input": [{"name": "VALUES", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [-1]},
                      {"name": "SCALE", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [1],
                       "optional": True}],
            "output": [{"name": "TOTAL", "data_type": "TYPE_FP32", "dims": [1]}],
            "dynamic_batching": {"preferred_batch_size": [8], "max_queue_delay_microseconds": "100"},
            "instance_group": [{"name": "var_dims_0", "kind": "KIND_CPU", "count": 1}]}
PIPE_OFFSET = {"name": "pipe_offset", **_COMMON, "max_batch_size": 8,
               "input": [{"name": "X", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [8]}],
               "output": [{"name": "RESULT", "data_type": "TYPE_FP32", "dims": [8]}],
               "instance_group": [{"name": "pipe_offset_0", "kind": "KIND_CPU", "count": 1}]}
TWO_GROUPS_TEXT = """# two groups, the second named
name: "grouped"
backend: "python"
max_batch_size: 8
instance_group [
  { count: 1, kind: KIND_CPU },  # the first
  { name: "extra", count: 2, kind: KIND_CPU }
]
parameters { key: "a" value { string_value: "1" } }
parameters { key: "b" value { string_value: "2" } }
"""
TWO_GROUPS = {"name": "grouped", **_COMMON, "max_batch_size": 8,
              "input": [{"name": "IN", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [2]}],
              "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]}],
              "instance_group": [{"name": "grouped_0", "kind": "KIND_CPU", "count": 1},
                                 {"name": "extra", "kind": "KIND_CPU", "count": 2}],
              "parameters": {"a": {"string_value": "1"}, "b": {"string_value": "2"}}}
PY_AUTO_STUB = 'name: "py_auto"\nbackend: "python"\n'  # a file that leaves the rest to auto-complete

CASES = {  # name: (the file's text, what the server serves from it)
    "py_auto": (PY_AUTO_STUB, PY_AUTO),
    "text_len": ((THIRD_PARTY / "text_len" / "config.pbtxt").read_text(), TEXT_LEN),
    "var_dims": ((THIRD_PARTY / "var_dims" / "config.pbtxt").read_text(), VAR_DIMS),
    "pipe_offset": ((THIRD_PARTY / "pipe_offset" / "config.pbtxt").read_text(), PIPE_OFFSET),
    "two_groups": (TWO_GROUPS_TEXT, TWO_GROUPS),
}


def _move(case: str, edit):
    """Return (file, text, the rebased config): the user's edit applied to what serves."""
    text, served_json = CASES[case]
    file, served = parse_config(text), from_json(served_json)
    proposed = copy_config(served)
    edit(proposed)
    before = [m.SerializeToString(deterministic=True) for m in (file, served, proposed)]
    result = rebase(file, served, proposed)
    after = [m.SerializeToString(deterministic=True) for m in (file, served, proposed)]
    assert before == after, "rebase changed one of its inputs"
    return file, text, result


def _expected(text: str, *replacements: tuple[str, str]) -> pb.ModelConfig:
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new, 1)
    return parse_config(text)


@pytest.mark.parametrize("case", CASES)
def test_nothing_moved_gives_the_file_back(case):
    file, text, result = _move(case, lambda c: None)
    assert result == file and result is not file
    assert patch_text(text, result) == text


def test_a_delay_on_a_file_without_one_adds_only_the_delay():
    _, text, result = _move("text_len", lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 500))
    # not the preferred_batch_size: [16] Triton filled in, nor any other served default
    assert result == _expected(text, ("dynamic_batching { }", "dynamic_batching { max_queue_delay_microseconds: 500 }"))
    assert patch_text(text, result) == text.replace("dynamic_batching { }",
                                                    "dynamic_batching { max_queue_delay_microseconds: 500 }")


def test_a_delay_on_an_auto_completed_model_writes_the_delay_alone():
    _, text, result = _move("py_auto", lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 100))
    assert patch_text(text, result) == text + "dynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n"


def test_a_changed_delay_replaces_the_files_delay():
    _, text, result = _move("var_dims", lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 900))
    assert result == _expected(text, ("max_queue_delay_microseconds: 100", "max_queue_delay_microseconds: 900"))


def test_dynamic_batching_switched_on_for_a_file_without_it_takes_the_whole_block():
    def edit(c):
        c.dynamic_batching.preferred_batch_size.extend([4, 8])
        c.dynamic_batching.max_queue_delay_microseconds = 200
    _, text, result = _move("pipe_offset", edit)
    assert result == parse_config(text + "dynamic_batching { preferred_batch_size: [ 4, 8 ] "
                                         "max_queue_delay_microseconds: 200 }\n")


def test_a_oneof_switch_drops_the_files_block_and_takes_the_new_one():
    def edit(c):
        c.ClearField("dynamic_batching")
        c.sequence_batching.max_sequence_idle_microseconds = 2_000_000
    _, text, result = _move("var_dims", edit)
    assert not result.HasField("dynamic_batching")
    assert result.sequence_batching == pb.ModelSequenceBatching(max_sequence_idle_microseconds=2_000_000)


def test_a_parameter_added_is_the_only_addition():
    _, text, result = _move("var_dims", lambda c: c.parameters["note"].__setattr__("string_value", "x"))
    assert result == parse_config(text + 'parameters { key: "note" value { string_value: "x" } }\n')


def test_parameters_are_rebased_key_by_key():
    def edit(c):
        c.parameters["b"].string_value = "3"
        del c.parameters["a"]
        c.parameters["c"].string_value = "4"
    _, text, result = _move("two_groups", edit)
    assert dict((k, v.string_value) for k, v in result.parameters.items()) == {"b": "3", "c": "4"}


def test_two_groups_where_the_file_has_two_change_in_place():
    _, text, result = _move("two_groups", lambda c: setattr(c.instance_group[1], "count", 4))
    assert result == _expected(text, ('name: "extra", count: 2', 'name: "extra", count: 4'))
    assert patch_text(text, result) == text.replace('name: "extra", count: 2', 'name: "extra", count: 4')


def test_a_group_the_file_does_not_list_is_written_with_the_changed_count_only():
    file, text, result = _move("py_auto", lambda c: setattr(c.instance_group[0], "count", 2))
    expected = copy_config(file)
    expected.instance_group.add(count=2)  # not Triton's name "py_auto" nor its KIND_CPU
    assert result == expected
    assert patch_text(text, result) == text + "instance_group {\n  count: 2\n}\n"


def test_a_group_added_takes_the_proposed_list_whole():
    def edit(c):
        c.instance_group.add(count=2, kind=pb.ModelInstanceGroup.KIND_CPU)
    _, _, result = _move("var_dims", edit)
    assert [(g.name, g.count) for g in result.instance_group] == [("var_dims_0", 1), ("", 2)]


def test_list_elements_line_up_with_the_files_own_when_it_lists_as_many():
    _, text, result = _move("var_dims", lambda c: c.input[1].dims.__setitem__(slice(None), [2]))
    assert result == _expected(text, ("dims: [ 1 ]", "dims: [ 2 ]"))  # SCALE's dims; no served FORMAT_NONE added


def test_a_list_the_file_does_not_spell_out_keeps_served_elements_and_writes_changed_ones_from_empty():
    two_inputs = {**PY_AUTO, "input": [*PY_AUTO["input"], {"name": "EXTRA", "data_type": "TYPE_INT32",
                                                           "format": "FORMAT_NONE", "dims": [1]}]}
    file, served = parse_config(PY_AUTO_STUB), from_json(two_inputs)
    proposed = copy_config(served)
    proposed.input[1].dims[:] = [3]
    result = rebase(file, served, proposed)
    assert result.input[0] == served.input[0]  # unchanged: as served, so the list still names every tensor
    assert result.input[1] == pb.ModelInput(dims=[3])  # changed: only what the user changed (the rule's cost:
    # a tensor the file never listed comes back without its name, and Triton will say so when it loads)


def test_a_message_the_file_lacks_gets_only_the_changed_sub_field():
    _, text, result = _move("py_auto", lambda c: setattr(c.optimization.input_pinned_memory, "enable", False))
    assert result.optimization == pb.ModelOptimizationPolicy(input_pinned_memory={})  # enable: false, no priority
    assert result.optimization.HasField("input_pinned_memory")
