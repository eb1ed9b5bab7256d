"""A child's environment is an allowlist without secrets (what the worker process really gets:
tests/contract/loadgen/test_worker.py)."""
from __future__ import annotations

import pytest

from loadgen.child_env import child_environment, is_secret
from tests.loadgen_data import LAB_ENVIRONMENT, SECRET_VALUES


def test_a_server_child_gets_what_runs_a_program_and_nothing_else():
    env = child_environment(LAB_ENVIRONMENT)
    assert env == {"PATH": "/venv/bin:/usr/bin", "HOME": "/home/lab", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                   "TMPDIR": "/tmp/x", "PYTHONPATH": "/extra", "LD_LIBRARY_PATH": "/libs"}, env


def test_a_client_child_also_gets_proxies_ca_bundles_and_the_grpc_address_but_no_password():
    env = child_environment(LAB_ENVIRONMENT, network=True)
    assert env["https_proxy"] == "http://proxy:3128" and env["SSL_CERT_FILE"] == "/ca.pem"
    assert env["TRITON_GRPC_URL"] == "h:8001"
    assert "HTTP_PROXY" not in env, "a proxy URL with user:password@ is a secret"
    assert not SECRET_VALUES & set(env.values()), env


def test_overrides_are_set_but_never_a_secret():
    env = child_environment(LAB_ENVIRONMENT, overrides={"PATH": "/first:/venv/bin", "LD_LIBRARY_PATH": "/wheel/libs"})
    assert (env["PATH"], env["LD_LIBRARY_PATH"]) == ("/first:/venv/bin", "/wheel/libs")
    with pytest.raises(ValueError, match="TRITON_CONTROL_KEY"):
        child_environment(LAB_ENVIRONMENT, overrides={"TRITON_CONTROL_KEY": "x"})


@pytest.mark.parametrize("name", ["TBL_OPERATOR_TOKEN", "TRITON_CONTROL_KEY", "client_secret", "PGPASSWORD",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "Api_Key"])
def test_secret_names(name):
    assert is_secret(name)
