"""Triton's model-repository API locked by the lab's key (issue 29), against the real server the lab starts.

Without the key a load, an unload and the index are refused over HTTP and gRPC; with it the lab's status, Apply
and Undo work; a model's Python code, run by the server, finds none of the lab's secrets in its environment, and
neither does the generator's worker process.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

from app.config.caps import served_model_names
from app.config.edits import set_settings
from app.config.errors import ServerQueryError
from app.config.poll import look_at
from app.config.read import settings_of
from app.config.settings import InstanceGroup
from app.server.control import ControlLocked, ModelControl
from app.server.control_key import GRPC_HEADER, HEADER, lock_flags, process_key
from app.server.control_mode import detect, probe_load_api
from app.server.status import fetch_status
from loadgen.child_env import is_secret
from tests.helpers import embedded_lab_serving
from tests.contract.hand_started import start_by_hand
from tests.third_party import SOURCE as THIRD_PARTY_REPOSITORY

SECRETS = {"TBL_OPERATOR_TOKEN": "operator-token-that-must-not-leak", "TRITON_CONTROL_KEY": "a-remote-servers-key",
           "DB_PASSWORD": "db-password-that-must-not-leak"}
PROBE_CONFIG = """name: "env_probe"
backend: "python"
max_batch_size: 0
input [ { name: "NAME" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "VALUE" data_type: TYPE_STRING dims: [ 1 ] }, { name: "NAMES" data_type: TYPE_STRING dims: [ 1 ] } ]
"""
PROBE_MODEL = '''"""VALUE = os.environ.get(NAME, ""); NAMES = the JSON list of the process's variable names."""
import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            name = pb_utils.get_input_tensor_by_name(request, "NAME").as_numpy().reshape(-1)[0].decode()
            value = np.array([os.environ.get(name, "").encode()], dtype=np.object_)
            names = np.array([json.dumps(sorted(os.environ)).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("VALUE", value),
                                                         pb_utils.Tensor("NAMES", names)]))
        return responses
'''


def _repository(base: Path) -> Path:
    """Return a repository of env_probe and the third-party text_len."""
    repo = base / "repo"
    (repo / "env_probe" / "1").mkdir(parents=True)
    (repo / "env_probe" / "config.pbtxt").write_text(PROBE_CONFIG)
    (repo / "env_probe" / "1" / "model.py").write_text(PROBE_MODEL)
    shutil.copytree(THIRD_PARTY_REPOSITORY / "text_len", repo / "text_len")
    return repo


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A Lab that starts its own embedded server while the dashboard's environment holds secrets."""
    base = tmp_path_factory.mktemp("locked")
    with embedded_lab_serving(_repository(base), base / "state", SECRETS) as lab:
        yield lab


def _post(url: str, headers: dict | None = None, body: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _served(lab, model: str) -> dict:
    with urllib.request.urlopen(f"{lab.server_facts().endpoint.http_url}/v2/models/{model}/config", timeout=10) as reply:
        return json.loads(reply.read())


def _grpc(lab) -> triton_grpc.InferenceServerClient:
    return triton_grpc.InferenceServerClient(lab.server_facts().endpoint.grpc_url)


def _keyless(lab):
    return dataclasses.replace(lab.server_facts().endpoint, control_key=None)


def test_http_load_unload_and_index_without_the_key_are_refused(lab):
    base = lab.server_facts().endpoint.http_url
    before = _served(lab, "text_len")
    config = {**before, "max_batch_size": 2}
    answers = {
        "load with a new config": _post(f"{base}/v2/repository/models/text_len/load",
                                        body={"parameters": {"config": json.dumps(config)}}),
        "unload": _post(f"{base}/v2/repository/models/text_len/unload"),
        "index": _post(f"{base}/v2/repository/index"),
        "load with a wrong key": _post(f"{base}/v2/repository/models/text_len/load", {HEADER: "guess"},
                                       {"parameters": {"config": json.dumps(config)}}),
        "unload with a wrong key": _post(f"{base}/v2/repository/models/text_len/unload", {HEADER: "guess"}),
    }
    for what, (code, text) in answers.items():
        assert code == 403 and f"expecting header '{HEADER}'" in text, f"{what}: HTTP {code} {text}"
    assert _served(lab, "text_len") == before, "a refused load changed the served config"
    assert triton_http.InferenceServerClient(lab.server_facts().endpoint.host_port).is_model_ready("text_len"), "unloaded"
    code, text = _post(f"{base}/v2/repository/index", lab.server_facts().endpoint.control_headers)
    assert code == 200 and "text_len" in text, f"with the key: HTTP {code} {text}"


def test_grpc_load_unload_and_index_without_the_key_are_refused(lab):
    """Triton's gRPC server wants the key under a prefixed name: the HTTP header's name, even with the right key,
    is refused there."""
    before = _served(lab, "text_len")
    calls = {
        "load": lambda c, h: c.load_model("text_len", headers=h, config=json.dumps({**before, "max_batch_size": 2})),
        "unload": lambda c, h: c.unload_model("text_len", headers=h),
        "index": lambda c, h: c.get_model_repository_index(headers=h),
    }
    with _grpc(lab) as client:
        for what, call in calls.items():
            for headers in (None, {GRPC_HEADER: "guess"}, lab.server_facts().endpoint.control_headers):
                with pytest.raises(InferenceServerException) as refused:
                    call(client, headers)
                text = refused.value.message() or str(refused.value)
                assert f"expecting header '{GRPC_HEADER}'" in text, f"{what} with {sorted(headers or ())}: {text}"
        names = {m.name for m in client.get_model_repository_index(headers=lab.server_facts().endpoint.grpc_control_headers).models}
    assert names == {"env_probe", "text_len"}, names
    assert _served(lab, "text_len") == before, "a refused load changed the served config"


def test_inference_health_metadata_config_and_statistics_need_no_key(lab):
    """The load generator, the metrics and the config panel use these: the lock must leave them open."""
    client = triton_http.InferenceServerClient(lab.server_facts().endpoint.host_port)
    assert client.is_server_ready() and client.get_server_metadata()["version"] == "2.51.0"
    assert client.get_model_config("text_len")["name"] == "text_len"
    text = triton_http.InferInput("TEXT", [1, 1], "BYTES")
    text.set_data_from_numpy(np.array([[b"four"]], dtype=np.object_))
    assert client.infer("text_len", [text]).as_numpy("LENGTH").tolist() == [[4]]
    assert client.get_inference_statistics("text_len")["model_stats"], "no statistics"


def test_the_labs_own_status_apply_and_undo_go_through(lab):
    status = lab.status()
    assert status.up and status.error is None, status
    assert {m.name: m.state for m in status.models} == {"env_probe": "READY", "text_len": "READY"}, status
    assert detect(lab.server_facts().endpoint, environ={}).mode == "explicit"  # the probe carries the key
    current = lab.served_config("text_len")
    result = lab.apply("text_len", set_settings(current, replace(settings_of(current),
                                                                 instance_groups=(InstanceGroup(count=2),))),
                       "instances 1→2")
    try:
        assert result.transport == "grpc", result
        assert _served(lab, "text_len")["instance_group"][0]["count"] == 2
    finally:
        lab.undo("text_len")
    assert _served(lab, "text_len")["instance_group"][0]["count"] == 1


def test_without_the_key_each_part_of_the_lab_says_how_to_get_in(lab):
    keyless = _keyless(lab)
    for prefer_grpc in (True, False):
        with pytest.raises(ControlLocked, match="TRITON_CONTROL_KEY"):
            ModelControl(keyless, prefer_grpc=prefer_grpc).load("text_len", timeout_s=30)
    assert probe_load_api(keyless).answer == "locked"
    mode = detect(keyless, environ={})
    assert mode.mode == "unknown" and not mode.can_apply and "TRITON_CONTROL_KEY" in mode.why_not, mode
    status = fetch_status(keyless)
    assert status.up and status.version == "2.51.0" and status.models == (), status
    assert "TRITON_CONTROL_KEY" in status.error, status.error
    with pytest.raises(ServerQueryError, match="TRITON_CONTROL_KEY"):
        served_model_names(keyless)
    assert look_at(keyless, "text_len").state == "UNKNOWN"
    assert look_at(lab.server_facts().endpoint, "text_len").state == "READY"


def test_a_models_python_code_finds_none_of_the_labs_secrets(lab):
    client = triton_http.InferenceServerClient(lab.server_facts().endpoint.host_port)

    def ask(name: str) -> tuple[str, list[str]]:
        asked = triton_http.InferInput("NAME", [1], "BYTES")
        asked.set_data_from_numpy(np.array([name.encode()], dtype=np.object_))
        result = client.infer("env_probe", [asked])
        return result.as_numpy("VALUE")[0].decode(), json.loads(result.as_numpy("NAMES")[0])

    path, names = ask("PATH")
    assert path, "the probe reads nothing: it cannot tell a hidden variable from a missing one"
    for secret in SECRETS:
        value, _ = ask(secret)
        assert value == "", f"the model read {secret}"
    assert not [name for name in names if is_secret(name)], names


def test_the_generator_worker_gets_no_secret(lab):
    pid = lab.traffic().worker_pid
    assert pid is not None, "the lab prestarts its worker"
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    assert "PATH" in env and not set(SECRETS.values()) & set(env.values()), sorted(env)


@pytest.fixture(scope="module")
def locked_none(tmp_path_factory):
    """A server in --model-control-mode=none, locked with the process key (as a user might lock theirs)."""
    base = tmp_path_factory.mktemp("locked-none")
    repo = base / "repo"
    shutil.copytree(THIRD_PARTY_REPOSITORY / "text_len", repo / "text_len")
    server = start_by_hand(repo, base, "--model-control-mode=none", *lock_flags(process_key()))
    try:
        yield server
    finally:
        server.stop()


def test_with_the_key_the_probe_still_tells_mode_none_from_explicit(locked_none):
    keyed = dataclasses.replace(locked_none.endpoint, control_key=process_key())
    assert probe_load_api(locked_none.endpoint).answer == "locked"
    assert probe_load_api(keyed).answer == "refused", probe_load_api(keyed)
    mode = detect(keyed, environ={})
    assert mode.mode == "none" and "--model-control-mode=explicit" in mode.why_not, mode
