"""Careless and hostile configs on the real server: each is refused or rolled back, and nothing is lost.

Every case proves: an error that names the field (or what failed) and the fix; the old config still
serving right answers; config.pbtxt byte-identical; the server alive; no APPLY in the history.
"""
from __future__ import annotations

import pytest
import tritonclient.http as triton_http
from tritonclient.grpc import model_config_pb2 as pb

from app.config import (Action, ConfigError, ConfigRejectedError, ConfigRolledBackError, ConfigValidationError,
                        ContractChangeError, copy_config, parse_config)
from app.config.verify import answer_check, verify

REFUSED, CONTRACT, ROLLED_BACK, REJECTED = (ConfigValidationError, ContractChangeError, ConfigRolledBackError,
                                            ConfigRejectedError)


def _edit(fn):
    def make(config):
        config = copy_config(config)
        fn(config)
        return config
    return make


def _param(key, value):
    return _edit(lambda c: c.parameters[key].__setattr__("string_value", value))


def _sequence_on_stateless(c):
    c.ClearField("dynamic_batching")
    c.sequence_batching.max_sequence_idle_microseconds = 5_000_000


def _reject_1us(c):
    c.dynamic_batching.default_queue_policy.timeout_action = pb.ModelQueuePolicy.REJECT
    c.dynamic_batching.default_queue_policy.default_timeout_microseconds = 1


def _two_big_groups(c):
    c.instance_group[0].count = 64
    c.instance_group.add(count=1, kind=pb.ModelInstanceGroup.KIND_CPU)


def _many_params(c):
    for i in range(80):
        c.parameters[f"p{i}"].string_value = "1"


def _warmup(count=1_000_000, data_file=""):
    def edit(c):
        warm = c.model_warmup.add(name="w", batch_size=1, count=count)
        warm.inputs["INPUT"].data_type = pb.TYPE_FP32
        warm.inputs["INPUT"].dims.append(256)
        if data_file:
            warm.inputs["INPUT"].input_data_file = data_file
        else:
            warm.inputs["INPUT"].zero_data = True
    return _edit(edit)


def _add_input(c):
    c.input.add(name="EXTRA", data_type=pb.TYPE_FP32, dims=[4])


def _invert_start(c):
    start = next(ci for ci in c.sequence_batching.control_input if ci.name == "START")
    start.control[0].int32_false_true[:] = [1, 0]


CASES = [
    # (id, model, make, confirm, error, words the message must carry)
    ("input dims", "gpu_sim", _edit(lambda c: c.input[0].dims.__setitem__(slice(None), [128])), False, CONTRACT,
     "input 'INPUT'"),
    ("input data type", "gpu_sim", _edit(lambda c: setattr(c.input[0], "data_type", pb.TYPE_FP16)), False, CONTRACT,
     "TYPE_FP16"),
    ("output renamed", "gpu_sim", _edit(lambda c: setattr(c.output[0], "name", "OUT")), False, CONTRACT, "output"),
    ("required input added", "gpu_sim", _edit(_add_input), False, CONTRACT, "required"),
    ("batch dimension dropped", "gpu_sim", _edit(lambda c: (c.ClearField("dynamic_batching"),
                                                             setattr(c, "max_batch_size", 0))), False, CONTRACT,
     "batching dimension"),
    ("input renamed, confirmed", "gpu_sim", _edit(lambda c: setattr(c.input[0], "name", "X")), True, ROLLED_BACK,
     "smoke request failed"),
    ("output renamed, confirmed", "gpu_sim", _edit(lambda c: setattr(c.output[0], "name", "OUT")), True, ROLLED_BACK,
     "lacks output(s) ['OUT']"),
    ("sequence batching on a stateless model", "gpu_sim", _edit(_sequence_on_stateless), True, REFUSED,
     "stateless model"),
    ("decoupled without confirming", "gpu_sim", _edit(lambda c: setattr(c.model_transaction_policy, "decoupled",
                                                                         True)), False, CONTRACT,
     "model_transaction_policy.decoupled: False → True"),
    ("REJECT after 1 µs", "gpu_sim", _edit(_reject_1us), False, REFUSED, "default_timeout_microseconds"),
    ("every instance passive", "gpu_sim", _edit(lambda c: setattr(c.instance_group[0], "passive", True)), False,
     REFUSED, "passive"),
    ("negative device cost", "gpu_sim", _param("launch_overhead_us", "-5"), False, REFUSED,
     "parameters['launch_overhead_us']"),
    ("absurd exponent", "gpu_sim", _param("compute_batch_exponent", "50"), False, REFUSED, "0..2"),
    ("cost that is not a number", "gpu_sim", _param("compute_us_batch1", "fast"), False, REFUSED, "not a number"),
    ("infinite cost", "gpu_sim", _param("copy_us_per_kib", "inf"), False, REFUSED, "copy_us_per_kib"),
    ("model kind changed", "gpu_sim", _param("model_kind", "stateful"), False, REFUSED, "model_kind"),
    ("another model's code", "gpu_sim", _edit(lambda c: setattr(c, "default_model_filename", "../../mlp/1/model.py")),
     False, REFUSED, "default_model_filename"),
    ("runtime outside", "gpu_sim", _edit(lambda c: setattr(c, "runtime", "/usr/lib/libevil.so")), False, REFUSED,
     "runtime"),
    ("execution environment outside", "gpu_sim", _param("EXECUTION_ENV_PATH", "/tmp/env.tar.gz"), False, REFUSED,
     "EXECUTION_ENV_PATH"),
    ("environment escaping the folder", "gpu_sim", _param("EXECUTION_ENV_PATH", "$$TRITON_MODEL_DIRECTORY/../../x.tgz"),
     False, REFUSED, "outside the model's folder"),
    ("native library outside", "gpu_sim", _edit(lambda c: c.model_operations.op_library_filename.append("/lib/x.so")),
     False, REFUSED, "op_library_filename"),
    ("cc file outside", "gpu_sim", _edit(lambda c: c.cc_model_filenames.__setitem__("7.5", "/etc/passwd")), False,
     REFUSED, "cc_model_filenames"),
    ("warm-up file outside", "gpu_sim", _warmup(1, "../../../etc/passwd"), False, REFUSED, "input_data_file"),
    ("a million warm-ups", "gpu_sim", _warmup(), False, REFUSED, "model_warmup[0].count"),
    ("instances across groups", "gpu_sim", _edit(_two_big_groups), False, REFUSED, "65 instances in all"),
    ("one enormous parameter", "gpu_sim", _param("note", "x" * 10_000), False, REFUSED, "longer than"),
    ("eighty parameters", "gpu_sim", _edit(_many_params), False, REFUSED, "entries"),
    ("GPU instances without a GPU", "gpu_sim", _edit(lambda c: setattr(c.instance_group[0], "kind",
                                                                      pb.ModelInstanceGroup.KIND_GPU)), True, REFUSED,
     "KIND_GPU"),
    ("preferred above max", "gpu_sim", _edit(lambda c: c.dynamic_batching.preferred_batch_size.append(64)), False,
     REFUSED, "preferred_batch_size"),
    ("a 100 s queue delay", "gpu_sim", _edit(lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds",
                                                               100_000_000)), False, REFUSED, "max_queue_delay"),
    ("a backend the server lacks", "gpu_sim", _edit(lambda c: setattr(c, "backend", "tensorrt")), True, REJECTED,
     "keeps serving the old one (checked)"),
    ("another model's name", "gpu_sim", _edit(lambda c: setattr(c, "name", "mlp")), False, REFUSED, "name"),
    ("control inputs removed", "stream_acc", _edit(lambda c: c.sequence_batching.ClearField("control_input")), False,
     CONTRACT, "sequence control inputs"),
    ("START inverted, confirmed", "stream_acc", _edit(_invert_start), True, ROLLED_BACK, "running sums"),
    ("1 µs sequence idle", "stream_acc", _edit(lambda c: setattr(c.sequence_batching,
                                                                 "max_sequence_idle_microseconds", 1)), False, REFUSED,
     "max_sequence_idle_microseconds"),
    ("negative step cost", "stream_acc", _param("step_us", "-1"), False, REFUSED, "step_us"),
]


@pytest.mark.parametrize(("model", "make", "confirm", "error", "words"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_bad_config_is_refused_or_rolled_back_and_nothing_is_lost(model, make, confirm, error, words, service,
                                                                    triton, restore_model):
    restore_model(model)
    path = service.config_path(model)
    before = path.read_bytes()
    current = service.current(model)
    with pytest.raises(ConfigError) as info:
        service.apply(model, make(current), confirm_contract=confirm)
    message = str(info.value)
    print(f"\n{type(info.value).__name__}: {message}")
    assert isinstance(info.value, error), f"{type(info.value).__name__}: {message}"
    assert words in message
    assert path.read_bytes() == before, "config.pbtxt changed"
    assert Action.APPLY not in [v.action for v in service.history(model)]
    client = triton_http.InferenceServerClient(triton.endpoint.host_port)
    assert client.is_server_live()
    verify(triton.endpoint, model, parse_config(before.decode()), answer_check(triton.repo, model))  # right answers
    if isinstance(info.value, ConfigRolledBackError):
        assert "restored and serves" in message


def test_cases_cover_at_least_thirty_configs():
    assert len(CASES) >= 30
