"""scripts/lab.sh run for real in bash: the test command's pytest runs (--unit/--quick, given arguments, the whole
suite), the venv installed from the hashed pins only when they changed (split in two halves, the pinned pip first),
and a Docker daemon started when none answers and stopped by its PID on any exit.

The commands that would install or run something big run against a checkout of stand-ins: lab.sh itself and the lock
files, a .venv/bin/python that writes down what it was asked, a dockerd that only waits.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.paths import ROOT
from tests.helpers import lab_sh_functions, wait_until
from tests.unit.deploy.test_requirements import RUNTIME, TEST, _pins, _pins_of

# .venv/bin/python as a stand-in: each call appends a line "args | PYTHONDONTWRITEBYTECODE" to $CALLS; `import docker`
# (the daemon's ping) succeeds when $DOCKER_UP exists; everything else succeeds at once.
PYTHON = """#!/bin/bash
echo "$* | ${PYTHONDONTWRITEBYTECODE-unset}" >> "$CALLS"
case "$*" in
  *"import docker"*) [ -e "$DOCKER_UP" ] ;;
  *) exit 0 ;;
esac
"""
# A dockerd as a stand-in: it writes its arguments, says it is up, and waits to be stopped.
DOCKERD = """#!/bin/bash
echo "$*" > "$DOCKERD_ARGS"
touch "$DOCKER_UP"
exec sleep 300
"""
# apt-get as a stand-in (first on PATH): a test never installs Debian packages.
APT_GET = """#!/bin/bash
echo "apt-get $*" >> "$CALLS"
"""


def _checkout(tmp_path: Path, installed: bool = True) -> Path:
    """Return a checkout of lab.sh and the lock files with a stand-in .venv (its stamp current when installed)."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "lab.sh", root / "scripts" / "lab.sh")
    for lock in (RUNTIME, TEST):
        shutil.copy2(lock, root / lock.name)
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(PYTHON)
    python.chmod(0o755)
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "apt-get").write_text(APT_GET)
    (tools / "apt-get").chmod(0o755)
    if installed:
        stamp = subprocess.run(["sha256sum", RUNTIME.name, TEST.name], cwd=root, capture_output=True, text=True,
                               check=True).stdout
        (root / ".venv" / ".requirements.sha256").write_text(stamp)
    return root


def _env(root: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TBL_", "PYTEST"))}
    return {**env, "PATH": f"{root.parent / 'bin'}:{env['PATH']}", "CALLS": str(root / "calls.txt"),
            "DOCKER_UP": str(root / "docker-up"), "PYTHONDONTWRITEBYTECODE": "1", **more}


def _lab_sh(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    run = subprocess.run(["bash", str(root / "scripts" / "lab.sh"), *args], cwd=root, env=_env(root, **env),
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, (run.stdout, run.stderr)
    return run


def _calls(root: Path) -> list[str]:
    path = root / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def _pythons(root: Path, verb: str) -> list[str]:
    """Return the arguments of the stand-in python's calls that ran a module (e.g. '-m pytest')."""
    return [line.split(" | ")[0] for line in _calls(root) if line.startswith(verb)]


# --- the test command ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--unit", "--quick"])
def test_the_unit_tier_is_one_pytest_on_two_workers_with_the_arguments_given(tmp_path, flag):
    root = _checkout(tmp_path)
    _lab_sh(root, "test", flag, "-k", "gate", "-x")
    assert _pythons(root, "-m pytest") == ["-m pytest -n 2 tests/unit -k gate -x"]
    assert _pythons(root, "-m pip") == [], "the stamp was current: nothing to install"
    assert all(line.endswith("| unset") for line in _calls(root)), "bytecode must be written (PYTHONDONTWRITEBYTECODE)"
    assert not [line for line in _calls(root) if "import docker" in line or line.startswith("apt-get")]


def test_the_whole_suite_is_one_pytest_on_the_workers_keeping_groups_together(tmp_path):
    root = _checkout(tmp_path)
    (root / "docker-up").touch()  # a daemon answers: it is used as it is
    _lab_sh(root, "test")
    assert _pythons(root, "-m compileall") == ["-m compileall -q -j 2 app loadgen tests lab_pages bench"]
    assert _pythons(root, "-m pytest") == ["-m pytest -n 4 --dist loadgroup"]
    assert not (root / ".lab" / "dockerd.log").exists(), "a daemon answered: none may be started"
    (root / "calls.txt").unlink()
    _lab_sh(root, "test", TBL_TEST_WORKERS="3")
    assert _pythons(root, "-m pytest") == ["-m pytest -n 3 --dist loadgroup"]


def test_arguments_after_test_are_one_pytest_run_as_given(tmp_path):
    root = _checkout(tmp_path)
    (root / "docker-up").touch()
    _lab_sh(root, "test", "tests/contract/server", "-n", "2", "-k", "docker or embedded")
    assert _pythons(root, "-m pytest") == ["-m pytest tests/contract/server -n 2 -k docker or embedded"]


def test_an_unknown_command_says_how_to_call_it(tmp_path):
    root = _checkout(tmp_path)
    run = subprocess.run(["bash", str(root / "scripts" / "lab.sh"), "tests"], cwd=root, env=_env(root),
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and "usage: scripts/lab.sh app|test" in run.stderr, run.stderr
    assert _calls(root) == []


# --- the venv: installed from the hashed pins, only when they changed ---------------------------------------------

def test_the_venv_is_installed_once_per_change_of_the_lock_files(tmp_path):
    root = _checkout(tmp_path, installed=False)
    _lab_sh(root, "test", "--unit")
    installs = _pythons(root, "-m pip")
    flags = "-m pip install -q --no-compile --disable-pip-version-check --require-hashes"
    assert installs == [f"{flags} -r .venv/.pip-requirement.txt", f"{flags} --no-deps -r .venv/.pins-1.txt",
                        f"{flags} --no-deps -r .venv/.pins-2.txt"] or installs == [
        f"{flags} -r .venv/.pip-requirement.txt", f"{flags} --no-deps -r .venv/.pins-2.txt",
        f"{flags} --no-deps -r .venv/.pins-1.txt"], installs  # the two halves install at once, in either order
    assert _pins_of((root / ".venv" / ".pip-requirement.txt").read_text(), "pip") == {"pip": _pins(RUNTIME)["pip"]}
    halves = {**_pins(root / ".venv" / ".pins-1.txt"), **_pins(root / ".venv" / ".pins-2.txt")}
    assert "pip" not in halves and set(halves) == (set(_pins(RUNTIME)) | set(_pins(TEST))) - {"pip"}
    stamp = (root / ".venv" / ".requirements.sha256").read_text().split()
    assert stamp[1::2] == ["requirements.txt", "requirements-test.txt"], stamp

    (root / "calls.txt").unlink()
    _lab_sh(root, "test", "--unit")  # nothing changed: nothing installed
    _lab_sh(root, "app")  # the runtime set is part of what the test set installed: nothing more
    assert _pythons(root, "-m pip") == []
    assert _pythons(root, "-m streamlit") == ["-m streamlit run streamlit_app.py --server.address 127.0.0.1"]

    with open(root / "requirements-test.txt", "a") as lock:
        lock.write("# a changed lock file\n")
    _lab_sh(root, "test", "--unit")
    assert len(_pythons(root, "-m pip")) == 3, "a changed lock file must install again"


def test_the_app_passes_the_allowed_hosts_to_streamlit_with_the_loopback_names(tmp_path):
    root = _checkout(tmp_path)
    _lab_sh(root, "app", "--server.port", "8600", TBL_ALLOWED_HOSTS="lab.example.com, ,proxy")
    hosts = " ".join(f"--server.allowedHosts {h}" for h in ("localhost", "127.0.0.1", "::1", "lab.example.com",
                                                              "proxy"))
    assert _pythons(root, "-m streamlit") == [
        f"-m streamlit run streamlit_app.py --server.address 127.0.0.1 {hosts} --server.port 8600"]


def test_lab_sh_installs_the_pip_that_requirements_txt_pins_by_its_hashes():
    """scripts/lab.sh's pinned_pip (and the Dockerfile's same awk) hand pip exactly the pip pin and its hashes."""
    function = lab_sh_functions("pinned_pip")
    run = subprocess.run(["bash", "-c", f"set -euo pipefail\n{function}\npinned_pip"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 0, run.stderr
    assert _pins_of(run.stdout, "pinned_pip") == {"pip": _pins(RUNTIME)["pip"]}, run.stdout


def test_lab_sh_splits_the_pins_in_two_halves_that_hold_each_package_once_with_its_hashes(tmp_path):
    """scripts/lab.sh installs the lock files in two halves at once (pip --no-deps): between them every pin of both
    files but pip (installed first), each in one half only, with its version and every hash."""
    function = lab_sh_functions("split_pins")
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    run = subprocess.run(["bash", "-c", f"set -euo pipefail\n{function}\nsplit_pins {one} {two} {RUNTIME} {TEST}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 0, run.stderr
    first, second = _pins(one), _pins(two)
    assert set(first) & set(second) == set()
    wanted = {**_pins(TEST), **_pins(RUNTIME)}
    del wanted["pip"]
    assert {**first, **second} == wanted
    assert {"playwright", "nvidia-pytriton"} <= set(first) and {"pyarrow", "numpy"} <= set(second)


def test_a_new_venv_gets_the_pinned_pip_from_the_bundled_wheel_without_ensurepip_s(tmp_path):
    """scripts/lab.sh makes .venv without pip where Python bundles a pip wheel, and that wheel's pip, run from the
    wheel, installs the pinned one by its hashes (the venv's own pip 3.3 s, replaced at once, is not installed)."""
    functions = lab_sh_functions("make_venv", "bundled_pip", "pinned_pip", "pip_install")
    (tmp_path / "requirements.txt").write_bytes(RUNTIME.read_bytes())
    script = f"""set -euo pipefail
PY={shlex.quote(sys._base_executable)}  # the interpreter .venv was made from
{functions}
wheel=$(bundled_pip)
[ -n "$wheel" ] || {{ echo "no bundled pip wheel"; exit 3; }}
make_venv
.venv/bin/python -c "import pip" 2>/dev/null && {{ echo "ensurepip ran"; exit 4; }}
pinned_pip > .venv/.pip-requirement.txt
PIP_WHEEL=$wheel pip_install -r .venv/.pip-requirement.txt
.venv/bin/python -m pip --version
"""
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, (run.stdout, run.stderr[-2000:])
    assert run.stdout.startswith(f"pip {_pins(RUNTIME)['pip'][0]} from {tmp_path}/.venv/"), run.stdout


# --- a Docker daemon for the tests: started when none answers, stopped by its PID on any exit ---------------------

def _docker_script(root: Path, then: str) -> str:
    functions = lab_sh_functions("ensure_docker", "install_packages", "stop_docker", "trap_exit")
    functions = functions.replace("/usr/sbin/dockerd", str(root / "dockerd"))  # the stand-in, where lab.sh looks
    return f"""set -euo pipefail
DOCKERD_PID=""
{functions}
ensure_docker
echo "pid=$DOCKERD_PID"
{then}
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")  # ended, not reaped yet


@pytest.mark.skipif(os.geteuid() != 0, reason="lab.sh starts dockerd only as root (CI runs as root)")
@pytest.mark.parametrize("ending", ["exit 0", "exit 3", "kill -TERM $$; sleep 5"], ids=["done", "failed", "signal"])
def test_a_daemon_is_started_when_none_answers_and_stopped_when_the_run_ends(tmp_path, ending):
    root = _checkout(tmp_path)
    (root / "dockerd").write_text(DOCKERD)
    (root / "dockerd").chmod(0o755)
    run = subprocess.run(["bash", "-c", _docker_script(root, ending)], cwd=root,
                         env=_env(root, DOCKERD_ARGS=str(root / "dockerd-args")), capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == {"exit 0": 0, "exit 3": 3}.get(ending, 128 + signal.SIGTERM), (run.returncode, run.stderr)
    pid = int(next(line for line in run.stdout.splitlines() if line.startswith("pid="))[4:])
    assert (root / "dockerd-args").read_text().split() == ["--bridge=none", "--iptables=false", "--ip6tables=false"]
    assert (root / ".lab" / "dockerd.log").exists()
    wait_until(lambda: _gone(pid), 15, f"the stand-in dockerd {pid} to be stopped when lab.sh ended")


def test_a_daemon_that_answers_is_used_as_it_is(tmp_path):
    root = _checkout(tmp_path)
    (root / "docker-up").touch()
    run = subprocess.run(["bash", "-c", _docker_script(root, "exit 0")], cwd=root, env=_env(root),
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0 and "pid=\n" in run.stdout, (run.stdout, run.stderr)
    assert not (root / ".lab").exists()
