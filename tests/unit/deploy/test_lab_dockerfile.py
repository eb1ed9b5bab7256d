"""deploy/lab.Dockerfile: the runtime set installed by hash, on a base image pinned by digest."""
from __future__ import annotations

import re

from app.paths import ROOT

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def test_the_lab_image_installs_the_runtime_set_by_hash_on_a_base_pinned_by_digest():
    dockerfile = (ROOT / "deploy" / "lab.Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.MULTILINE).group(1)
    assert DIGEST.search(base), base
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert len(installs) == 2 and all("--require-hashes" in line for line in installs), installs
    assert "requirements-test" not in dockerfile and "--upgrade" not in dockerfile
