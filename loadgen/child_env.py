"""The environment of a process the lab starts (tritonserver, the load generator's worker): an allowlist.

A child gets what it needs to run, never a copy of the lab's environment: a model's Python code runs in the
server's processes, so anything the server inherits (TBL_OPERATOR_TOKEN, TRITON_CONTROL_KEY, cloud credentials)
would be that code's to read. Here, not in app/, because loadgen/ imports nothing from app/ and both use it.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

# What any child needs: finding programs and libraries, a home, the locale, temp files, the interpreter's own
# settings (the GPU capture sets PYTHONPATH and PYTHONNOUSERSITE for the server it starts), GPUs and thread counts.
RUN = ("PATH", "LD_LIBRARY_PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH",
       "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "CUDA_VISIBLE_DEVICES",
       "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "OMP_NUM_THREADS")
RUN_PREFIXES = ("LC_",)
# What a client of a server also needs: proxies and CA bundles (tritonclient's gRPC reads both from the
# environment) and the gRPC address a run may fall back to (loadgen.triton_grpc.grpc_path.grpc_target).
NETWORK = ("http_proxy", "https_proxy", "no_proxy", "grpc_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
           "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
           "TRITON_GRPC_URL")
SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"://[^/@\s]*:[^/@\s]*@")  # http://user:password@proxy


def child_environment(environ: Mapping[str, str] | None = None, *, network: bool = False,
                      overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the allowlisted part of environ (the process's by default), with overrides set on top.

    network adds the proxy, CA-bundle and gRPC-address variables a client needs. Nothing whose name looks like a
    secret passes, nor a URL carrying a password; an override named like a secret is a ValueError.
    """
    env = os.environ if environ is None else environ
    wanted = set(RUN) | (set(NETWORK) if network else set())
    out = {name: value for name, value in env.items()
           if (name in wanted or name.startswith(RUN_PREFIXES)) and not is_secret(name, value)}
    for name, value in (overrides or {}).items():
        if is_secret(name, value):
            raise ValueError(f"{name} looks like a secret: a child process must not get it")
        out[name] = value
    return out


def is_secret(name: str, value: str = "") -> bool:
    """Return True when a variable's name looks like a secret's, or its value is a URL with a password."""
    return bool(SECRET_NAME.search(name) or _URL_CREDENTIALS.search(value))
