"""Editing a user's config.pbtxt in place: the result parses to the new config, and nothing else moves."""
from __future__ import annotations

import difflib
import random

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from app.config import text_edit
from app.config.model_config import copy_config, format_config, parse_config
from app.config.text_edit import TextEditError, patch_text
from app.config.text_tree import Block, Bracket, Field, parse_tree, tokenize
from app.paths import MODEL_REPOSITORY
from tests.unit.config.random_edits import is_map, mutate
from tests.unit.config.shipped import THIRD_PARTY

REAL = sorted([*THIRD_PARTY.glob("*/config.pbtxt"), *MODEL_REPOSITORY.glob("*/config.pbtxt"),
               *MODEL_REPOSITORY.glob("*/configs/*.pbtxt")])

# Every syntax text_format accepts in a config.pbtxt, in one file.
STYLED = r"""# Copyright header
# second line

name: 'styled'   # single quotes
platform: "onnx" "runtime_onnx"   # concatenated
max_batch_size: 16;
input < name: "IN"; data_type: 11; dims: [ 3, -1 ]; format: FORMAT_NCHW >
input: { name: 'IN2', data_type: TYPE_STRING, dims: 1, dims: 2 }
output [
  # the only output
  {
    name: "OUT"   # trailing
    data_type: TYPE_FP32
    dims: [
      4,  # four
      8
    ]
  }
]
instance_group: [ { count: 2, kind: KIND_CPU }, { count: 1 kind: 2 gpus: [ 0, 1 ] } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  preserve_ordering: True
  priority_levels: 2
  default_priority_level: 1
  priority_queue_policy { key: 1 value { timeout_action: REJECT default_timeout_microseconds: 5000 } }
  priority_queue_policy: [ { key: 2, value: { max_queue_size: 3 } } ]
}
parameters: { key: "a" value: { string_value: "x\"y" } }
parameters [ { key: 'b', value { string_value: '1e-3' } } ]
model_warmup { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: t } } }
optimization { priority: PRIORITY_MAX cuda { graphs: 1 } }
version_policy { specific { versions: [ 1, 2 ] } }
cc_model_filenames { key: "7.5" value: "m.plan" }
metric_tags: { key: "team", value: "ml" }
"""

# The shapes of Triton's own example configs: 4-space and ragged indentation, `name : value`, commas after
# blocks, `}]`, a blank line inside a block, lists of messages inside lists.
SEQUENCE = """name: "dyna_seq"
platform: "custom"
max_batch_size: 8
sequence_batching {
    max_sequence_idle_microseconds: 10000000
    oldest {
      max_candidate_sequences: 1024
      max_queue_delay_microseconds: 10000
    }

  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          int32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "CORRID"
      control [ { kind: CONTROL_SEQUENCE_CORRID, data_type: TYPE_UINT64 } ]
    }
  ]
  state { input_name: "IN_S" output_name: "OUT_S" data_type: TYPE_FP32 dims: -1
          initial_state { name: "s" data_type: TYPE_FP32 dims: 1 zero_data: true } }
}
parameters [
  {
    key: "execute_delay_ms"
    value: { string_value: "3" }
  }
]
"""
ACCELERATED = """name: "ocr"
backend: "onnxruntime"
max_batch_size : 16
output [ { name: "logits", data_type: TYPE_FP32, dims: [ 26, 37 ] } ]

model_warmup {
   name: "warm"
   batch_size: 16
   inputs: {
       key: "input.1"
       value: {
           data_type: TYPE_FP32
           dims: 1
           dims: 32
           zero_data: true
       }
   }
}

optimization {
  graph : {
    level : 1
  }
 execution_accelerators {
    gpu_execution_accelerator : [ {
      name : "tensorrt",
      parameters { key: "precision_mode" value: "FP16" },
      parameters { key: "max_workspace_size_bytes" value: "1073741824" }
    }]
  }
}
"""
PRIORITIES = """name: "prio"
max_batch_size: 1
model_metrics { metric_control { histogram_options { buckets: [ .5, 1e-3, -inf ] } } }
dynamic_batching:
{
    # every level
    priority_levels: 18446744073709551615
    priority_queue_policy: [
       {key: 4294967296
        value: {
          timeout_action: REJECT
\t  default_timeout_microseconds: 18446744073709551615
\t  max_queue_size: 10
       }
    }
]
}"""
TABS = ('name: "tabs"\nmax_batch_size: 8\n'
        'dynamic_batching {\n\tpreferred_batch_size: 4\n\tmax_queue_delay_microseconds: 100\n}\n')

BASES = {
    **{str(p.relative_to(p.parents[1])): p.read_text() for p in REAL},
    "styled": STYLED, "sequence": SEQUENCE, "accelerated": ACCELERATED, "tabs": TABS, "empty": "",
    "only_comments": "# nothing here\n\n# really\n",
    "crlf": (THIRD_PARTY / "var_dims" / "config.pbtxt").read_text().replace("\n", "\r\n"),
}


def _patched(text: str, edit) -> tuple[str, pb.ModelConfig]:
    new = parse_config(text)
    edit(new)
    return patch_text(text, new), new


def _diff(a: str, b: str) -> list[str]:
    """Changed lines only, '-' and '+' marked."""
    return [line.rstrip("\n") for line in difflib.unified_diff(a.splitlines(True), b.splitlines(True), n=0)
            if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def _read(name: str) -> str:
    return (THIRD_PARTY / name / "config.pbtxt").read_text()


# --- the contract --------------------------------------------------------------------------------------------------

def test_the_real_and_styled_bases_are_valid_configs():
    for name, text in BASES.items():
        parse_config(text)  # a base that does not parse would make every case below vacuous
        assert name == "empty" or text.strip()


@pytest.mark.parametrize("name", sorted(BASES))
def test_an_equal_config_gives_the_text_back_byte_for_byte(name):
    text = BASES[name]
    assert patch_text(text, parse_config(text)) == text


def test_a_text_that_does_not_parse_is_refused_so_the_caller_writes_canonical_text():
    with pytest.raises(TextEditError, match="does not parse"):
        patch_text("name: 'x' nonsense {", pb.ModelConfig(name="x"))


def test_a_wrong_patch_is_caught_by_the_postcondition(monkeypatch):
    monkeypatch.setattr(text_edit, "scalar_text", lambda f, value, like="": "3")  # writes the wrong number
    text = _read("fanout")
    new = parse_config(text)
    new.instance_group[0].count = 2
    with pytest.raises(TextEditError, match="different config"):
        patch_text(text, new)


def test_the_issue_example_one_number_is_a_one_token_diff():
    text = _read("fanout")
    out, _ = _patched(text, lambda c: setattr(c.instance_group[0], "count", 2))
    assert out == text.replace("{ count: 1, kind: KIND_CPU }", "{ count: 2, kind: KIND_CPU }"), out
    canonical = _diff(text, format_config(parse_config(out)))
    assert len(_diff(text, out)) == 2 < len(canonical), canonical  # what MessageToString would have shown


def test_the_licence_header_and_comments_survive_an_edit():
    text = _read("text_len")
    out, _ = _patched(text, lambda c: setattr(c, "max_batch_size", 4))
    assert _diff(text, out) == ["-max_batch_size: 16", "+max_batch_size: 4"]
    assert out.startswith("# Copyright 2026 Example Corp.") and "# One string per row." in out


# --- scalars ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("edit, before, after", [
    (lambda c: setattr(c, "name", "renamed"), "name: 'styled'   # single quotes", "name: 'renamed'   # single quotes"),
    (lambda c: setattr(c, "name", "it's"), "name: 'styled'", r"name: 'it\'s'"),
    (lambda c: setattr(c, "platform", "tensorrt_plan"), 'platform: "onnx" "runtime_onnx"   # concatenated',
     'platform: "tensorrt_plan"   # concatenated'),
    (lambda c: setattr(c, "max_batch_size", 32), "max_batch_size: 16;", "max_batch_size: 32;"),
    (lambda c: setattr(c.input[0], "data_type", pb.TYPE_INT8), "data_type: 11;", "data_type: TYPE_INT8;"),
    (lambda c: setattr(c.model_warmup[0].inputs["IN"], "zero_data", False), "zero_data: t", "zero_data: f"),
    (lambda c: setattr(c.instance_group[1], "kind", pb.ModelInstanceGroup.KIND_GPU), "count: 1 kind: 2",
     "count: 1 kind: KIND_GPU"),
])
def test_a_changed_scalar_rewrites_its_value_token_only_in_the_spelling_it_had(edit, before, after):
    out, _ = _patched(STYLED, edit)
    assert out == STYLED.replace(before, after, 1), _diff(STYLED, out)


def test_a_float_and_a_uint64_keep_the_rest_of_their_line():
    out, _ = _patched(PRIORITIES, lambda c: c.model_metrics.metric_control[0].histogram_options.buckets
                      .__setitem__(1, 0.25))
    assert _diff(PRIORITIES, out)[1] == \
        "+model_metrics { metric_control { histogram_options { buckets: [ .5, 0.25, -inf ] } } }"
    out, _ = _patched(PRIORITIES, lambda c: setattr(c.dynamic_batching, "priority_levels", 3))
    assert _diff(PRIORITIES, out) == ["-    priority_levels: 18446744073709551615", "+    priority_levels: 3"]


# --- fields that appear ---------------------------------------------------------------------------------------------

def test_a_new_top_level_message_goes_after_the_last_field_in_text_format_style():
    text = _read("fanout")
    out, _ = _patched(text, lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 100))
    assert out == text + "dynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n"


def test_a_new_field_takes_its_siblings_indentation():
    out, _ = _patched(TABS, lambda c: setattr(c.dynamic_batching, "preserve_ordering", True))
    assert "\tmax_queue_delay_microseconds: 100\n\tpreserve_ordering: true\n}" in out
    out, _ = _patched(SEQUENCE, lambda c: setattr(c.sequence_batching.oldest, "preserve_ordering", True))
    assert "      max_queue_delay_microseconds: 10000\n      preserve_ordering: true\n    }" in out


def test_a_new_field_in_a_one_line_block_stays_on_that_line():
    text = _read("var_dims")
    out, _ = _patched(text, lambda c: setattr(c.instance_group[0], "count", 2))
    assert _diff(text, out) == ["-instance_group [ { kind: KIND_CPU } ]",
                                "+instance_group [ { kind: KIND_CPU count: 2 } ]"]
    out, _ = _patched(text, lambda c: c.instance_group[0].gpus.append(0))
    assert "instance_group [ { kind: KIND_CPU gpus: 0 } ]" in out


def test_a_field_fills_an_empty_block():
    text = _read("text_len")
    out, _ = _patched(text, lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 50))
    assert _diff(text, out) == ["-dynamic_batching { }", "+dynamic_batching { max_queue_delay_microseconds: 50 }"]
    out, _ = _patched("dynamic_batching {\n}\n", lambda c: c.dynamic_batching.preferred_batch_size.extend([2, 4]))
    assert out == "dynamic_batching {\n  preferred_batch_size: 2\n  preferred_batch_size: 4\n}\n"


def test_fields_can_be_written_into_an_empty_file_or_one_without_a_final_newline():
    out, _ = _patched("", lambda c: setattr(c, "max_batch_size", 4))
    assert out == "max_batch_size: 4\n"
    out, _ = _patched("# only a comment", lambda c: setattr(c, "name", "m"))
    assert out == '# only a comment\nname: "m"\n'
    out, _ = _patched('name: "m"', lambda c: setattr(c, "max_batch_size", 4))
    assert out == 'name: "m"\nmax_batch_size: 4'


# --- fields that disappear ------------------------------------------------------------------------------------------

def test_a_removed_field_takes_its_line_and_trailing_comment_but_not_the_comment_above():
    text = _read("var_dims")
    out, _ = _patched(text, lambda c: c.input[0].ClearField("dims"))
    assert "# any length" not in out and "dims: [ -1 ]" not in out
    out, _ = _patched(STYLED, lambda c: c.ClearField("output"))
    assert "# the only output" not in out  # it sat inside the removed list
    text = "name: \"m\"\n# the batching\ndynamic_batching { }  # on\nbackend: \"python\"\n"
    out, _ = _patched(text, lambda c: c.ClearField("dynamic_batching"))
    assert out == "name: \"m\"\n# the batching\nbackend: \"python\"\n"


@pytest.mark.parametrize("text, edit, expected", [
    ("instance_group [ { count: 1, kind: KIND_CPU } ]", lambda c: c.instance_group[0].ClearField("count"),
     "instance_group [ { kind: KIND_CPU } ]"),
    ("instance_group [ { count: 1, kind: KIND_CPU } ]", lambda c: c.instance_group[0].ClearField("kind"),
     "instance_group [ { count: 1 } ]"),
    ("instance_group [ { count: 1, kind: KIND_CPU, name: 'g' } ]", lambda c: c.instance_group[0].ClearField("kind"),
     "instance_group [ { count: 1, name: 'g' } ]"),
    ("dynamic_batching { max_queue_delay_microseconds: 100 }",
     lambda c: c.dynamic_batching.ClearField("max_queue_delay_microseconds"), "dynamic_batching { }"),
    ("max_batch_size: 8; name: 'm'", lambda c: c.ClearField("max_batch_size"), "name: 'm'"),
    ("dynamic_batching { preserve_ordering: True }", lambda c: setattr(c.dynamic_batching, "preserve_ordering", False),
     "dynamic_batching { }"),  # back to its default: a field without presence disappears
])
def test_an_inline_removal_leaves_no_dangling_separator(text, edit, expected):
    out, _ = _patched(text, edit)
    assert out == expected


# --- lists ------------------------------------------------------------------------------------------------------------

def test_a_bracket_list_stays_a_bracket_list():
    text = _read("fanout")
    out, _ = _patched(text, lambda c: c.input[0].dims.extend([3, 4]))
    assert 'dims: [ 1, 3, 4 ] } ]' in out
    out, _ = _patched(STYLED, lambda c: c.output[0].dims.pop())
    assert "    dims: [\n      4  # four\n    ]" in out  # the comma went, the comment stayed
    out, _ = _patched(STYLED, lambda c: c.dynamic_batching.preferred_batch_size.__delitem__(0))
    assert "  preferred_batch_size: [ 8 ]\n" in out


def test_repeated_lines_stay_repeated_lines():
    gpu = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()
    out, _ = _patched(gpu, lambda c: c.dynamic_batching.preferred_batch_size.append(16))
    assert _diff(gpu, out) == ["+  preferred_batch_size: 16"]
    assert "  preferred_batch_size: 8\n  preferred_batch_size: 16\n  max_queue_delay" in out
    out, _ = _patched(gpu, lambda c: c.dynamic_batching.preferred_batch_size.__delitem__(1))
    assert _diff(gpu, out) == ["-  preferred_batch_size: 8"]
    out, _ = _patched(gpu, lambda c: c.dynamic_batching.preferred_batch_size.__setitem__(0, 2))
    assert _diff(gpu, out) == ["-  preferred_batch_size: 4", "+  preferred_batch_size: 2"]


def test_list_elements_are_patched_in_place_and_extra_ones_follow_the_last_in_its_style():
    text = _read("var_dims")
    out, _ = _patched(text, lambda c: setattr(c.input[1], "optional", False))
    assert _diff(text, out) == ["-    optional: true"]
    out, _ = _patched(text, lambda c: c.input.add(name="Z", data_type=pb.TYPE_FP32, dims=[2]))
    added = '  },\n  {\n    name: "Z"\n    data_type: TYPE_FP32\n    dims: 2\n  }\n]'
    assert out == text.replace("    optional: true\n  }\n]", "    optional: true\n" + added), out
    out, _ = _patched(_read("fanout"), lambda c: c.instance_group.add(count=2, kind=pb.ModelInstanceGroup.KIND_CPU))
    assert "instance_group [ { count: 1, kind: KIND_CPU }, { count: 2, kind: KIND_CPU } ]" in out
    gpu = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()
    out, _ = _patched(gpu, lambda c: c.instance_group.add(count=2, kind=pb.ModelInstanceGroup.KIND_CPU))
    assert "instance_group {\n  count: 1\n  kind: KIND_CPU\n}\ninstance_group {\n  count: 2\n" in out


def test_removing_the_last_list_element_removes_it_alone():
    text = _read("pipeline")
    out, _ = _patched(text, lambda c: c.ensemble_scheduling.step.pop())
    assert out.count("model_name") == 1 and "    }\n  ]\n}" in out
    assert "# RAW -> pipe_scale -> pipe_offset -> RESULT" in out


# --- maps ---------------------------------------------------------------------------------------------------------

def test_map_entries_are_matched_by_key():
    gpu = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()

    def edit(c):
        c.parameters["compute_us_batch1"].string_value = "9"
        del c.parameters["copy_us_per_kib"]
        c.parameters["zz_new"].string_value = "1"
    out, _ = _patched(gpu, edit)
    diff = _diff(gpu, out)
    assert sorted(diff) == sorted([
        '-    string_value: "3000"', '+    string_value: "9"',
        "-parameters {", '-  key: "copy_us_per_kib"', "-  value {", '-    string_value: "250"', "-  }", "-}",
        "+parameters {", '+  key: "zz_new"', "+  value {", '+    string_value: "1"', "+  }", "+}",
    ]), diff
    assert out.index('key: "zz_new"') > out.index('key: "model_kind"')  # appended after the last entry


def test_one_line_map_entries_keep_their_line():
    text = _read("pipeline")
    out, _ = _patched(text, lambda c: c.ensemble_scheduling.step[0].input_map.__setitem__("RAW", "raw"))
    assert _diff(text, out) == ['-      input_map { key: "RAW", value: "RAW" }',
                                '+      input_map { key: "RAW", value: "raw" }']
    out, _ = _patched(text, lambda c: c.ensemble_scheduling.step[1].output_map.__setitem__("EXTRA", "e"))
    assert _diff(text, out) == ['+      output_map { key: "EXTRA", value: "e" }']


def test_a_map_of_messages_patches_the_value_inside_its_entry():
    out, _ = _patched(STYLED, lambda c: setattr(c.dynamic_batching.priority_queue_policy[2], "max_queue_size", 9))
    assert _diff(STYLED, out) == [
        "-  priority_queue_policy: [ { key: 2, value: { max_queue_size: 3 } } ]",
        "+  priority_queue_policy: [ { key: 2, value: { max_queue_size: 9 } } ]"]
    out, _ = _patched(ACCELERATED, lambda c: c.optimization.execution_accelerators.gpu_execution_accelerator[0]
                      .parameters.__delitem__("precision_mode"))
    assert '      name : "tensorrt",\n      parameters { key: "max_workspace_size_bytes"' in out


# --- oneof ----------------------------------------------------------------------------------------------------------

def test_a_oneof_switch_puts_the_new_member_where_the_old_one_was():
    gpu = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()

    def edit(c):
        c.ClearField("dynamic_batching")
        c.sequence_batching.max_sequence_idle_microseconds = 5_000_000
    out, _ = _patched(gpu, edit)
    assert "instance_group {\n  count: 1\n  kind: KIND_CPU\n}\nsequence_batching {\n" \
           "  max_sequence_idle_microseconds: 5000000\n}\nparameters {" in out
    text = _read("versioned")
    out, _ = _patched(text, lambda c: c.version_policy.all.SetInParent())
    assert _diff(text, out) == ["-version_policy: { latest { num_versions: 1 } }", "+version_policy: { all { } }"]


# --- the property ---------------------------------------------------------------------------------------------------

def _comments(text: str) -> list[tuple[int, str]]:
    """(offset, text) of every # comment: the gaps between tokens hold nothing else."""
    out, pos = [], 0
    for token in [*tokenize(text), None]:
        end = token.start if token else len(text)
        gap, at = text[pos:end], 0
        while (hash_at := gap.find("#", at)) >= 0:
            stop = gap.find("\n", hash_at)
            stop = len(gap) if stop < 0 else stop
            out.append((pos + hash_at, gap[hash_at:stop].rstrip("\r")))
            at = stop
        pos = token.end if token else pos
    return out


def _spans(block: Block, path: list, out: list) -> list:
    """(start, end, path) of every field occurrence and list element; a path step is (name, element indexes)."""
    counts: dict[str, int] = {}
    for node in block.fields:
        first = counts.get(node.name, 0)
        ids = tuple(range(first, first + len(node.items)))
        counts[node.name] = first + len(node.items)
        out.append((node.start, node.end, [*path, (node.name, ids, node)]))
        for i, item in zip(ids, node.items):
            if isinstance(item, Block):
                inner = [*path, (node.name, (i,), item)]
                if isinstance(node.value, Bracket):
                    out.append((item.start, item.end, inner))
                _spans(item, inner, out)
    return out


def _owner(text: str, spans: list, pos: int) -> list:
    """A trailing comment belongs to what ends last before it on its line; a comment line to what encloses it."""
    line = text.rfind("\n", 0, pos) + 1
    if text[line:pos].strip():
        before = [s for s in spans if line <= s[1] <= pos]
        if before:
            last = max(s[1] for s in before)
            return min((s for s in before if s[1] == last), key=lambda s: len(s[2]))[2]
    inside = [s for s in spans if s[0] < pos < s[1]]
    return max(inside, key=lambda s: len(s[2]))[2] if inside else []


def _survives(path: list, old, new, text: str) -> bool:
    """Whether every step of path is still in new: map entries by key, list elements by index, scalars non-default."""
    for name, ids, node in path:
        f = new.DESCRIPTOR.fields_by_name[name]
        if is_map(f):
            entry_type = getattr(old, name).GetEntryClass()
            items = node.items if isinstance(node, Field) else (node,)
            keys = [text_format.Parse(text[i.open + 1:i.close], entry_type()).key for i in items]
            if not any(k in getattr(new, name) for k in keys):
                return False
            if len(items) == 1:
                old, new = (_entry(entry_type, f, keys[0], m) for m in (old, new))
        elif f.is_repeated:
            if ids and ids[0] >= len(getattr(new, name)):
                return False
            if ids and f.type == f.TYPE_MESSAGE:
                old, new = getattr(old, name)[ids[0]], getattr(new, name)[ids[0]]
        elif f.type == f.TYPE_MESSAGE:
            if not new.HasField(name):
                return False
            old, new = getattr(old, name), getattr(new, name)
        elif not (new.HasField(name) if f.has_presence else getattr(new, name) != f.default_value):
            return False
    return True


def _entry(entry_type, f, key, message):
    entry = entry_type(key=key)
    if f.message_type.fields_by_name["value"].type == f.TYPE_MESSAGE:
        entry.value.CopyFrom(getattr(message, f.name)[key])
    else:
        entry.value = getattr(message, f.name)[key]
    return entry


@pytest.mark.parametrize("name", sorted(BASES))
def test_random_edits_hold_the_postcondition_and_keep_every_comment_whose_field_survives(name):
    text, edits = BASES[name], 60
    base, spans = parse_config(text), _spans(parse_tree(text), [], [])
    owned = [(comment, _owner(text, spans, pos)) for pos, comment in _comments(text)]
    changed = 0
    for i in range(edits):
        rng = random.Random(f"{name}-{i}")
        new = copy_config(base)
        for _ in range(rng.randint(1, 4)):
            mutate(new, rng)
        out = patch_text(text, new)  # raises TextEditError if the postcondition failed
        assert parse_config(out) == new or format_config(parse_config(out)) == format_config(new), (i, out)
        lost = [c for c, path in owned if c not in out and _survives(path, base, new, text)]
        assert not lost, f"edit {i} lost comments {lost}:\n" + "\n".join(_diff(text, out))
        changed += out != text
    assert changed > edits // 2, f"only {changed} of {edits} random edits changed the text"
