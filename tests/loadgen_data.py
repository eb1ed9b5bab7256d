"""Data the load generator's unit and contract tests share: a lab process's environment with secrets in it, and a
spec file for `python -m loadgen run`."""

# A lab process's environment: what a load worker may inherit and the secrets it must not
LAB_ENVIRONMENT = {
    "PATH": "/venv/bin:/usr/bin", "HOME": "/home/lab", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp/x",
    "PYTHONPATH": "/extra", "LD_LIBRARY_PATH": "/libs",
    "TBL_OPERATOR_TOKEN": "operator-secret", "TRITON_CONTROL_KEY": "control-secret", "GITHUB_TOKEN": "gh-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret", "DB_PASSWORD": "db-secret", "my_api_key": "api-secret",
    "TBL_STATE_DIR": "/state", "TRITON_URL": "http://h:8000", "SHELL": "/bin/bash",
    "https_proxy": "http://proxy:3128", "HTTP_PROXY": "http://user:pw@proxy:3128", "SSL_CERT_FILE": "/ca.pem",
    "TRITON_GRPC_URL": "h:8001",
}
SECRET_VALUES = {"operator-secret", "control-secret", "gh-secret", "aws-secret", "db-secret", "api-secret"}

# A spec file with two classes (one with a stream of its own) and sequences
CLI_SPEC = """
mode: closed
concurrency: 3
classes:
  - {name: fast, share: 1, priority: 0, sla_ms: 50}
  - {name: probe, rate: 20, arrival: {kind: constant}}
sequences:
  - {count: 2, length: {kind: fixed, n: 4}}
"""
