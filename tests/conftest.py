"""The suite in three tiers, one folder each (docs/TESTS.md):

- tests/unit: pure logic, and every page drawn and clicked through AppTest on a FakeLab (tests/fakes): no server,
  no process, no network.
- tests/contract: the lab against real programs: one tritonserver per test process (tests/servers.py), hand-started
  servers in each control mode, Docker, Prometheus, Locust. Behaviour only: no timing margins.
- tests/smoke: a handful of pages in Debian's Chromium on a real dashboard.

Claims that are measurements (scenario verdicts, A/B false-call rates, loadgen against perf_analyzer, the autopilot
against static configs) are run by bench/ and `python -m app.scenarios run --all`, not here.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest

# One BLAS thread in every process the tests start (the servers' allowlist passes it to every Python stub): numpy's
# OpenBLAS otherwise starts a thread per core in each stub, and a model load's stubs cost 0.48 s of CPU instead of
# 0.28 s (ten reloads of gpu_sim, 2026-12-04).
os.environ.setdefault("OMP_NUM_THREADS", "1")

TIERS = ("unit", "contract", "smoke")
# Tests that share one thing outside their process run on one worker, in turn: the Docker daemon (the lab's local
# image tag, containers named by port), the hand-started servers (one per control mode and worker), a browser.
DOCKER = ("tests/contract/server/test_docker_server.py", "tests/contract/deploy/test_compose.py")
HAND_STARTED_FIXTURES = {"none_server", "poll_server", "explicit_server"}
BROWSER_TIMEOUT_S = 600  # a page's behaviour, each wait bounded: the timeout only ends a hang
PREFERRED_PORTS = (8000, 8001, 8002)  # ServerOptions' defaults: an embedded Lab takes them when they are free


class PortHolder:
    """Keep the preferred ports bound and listening while the run lasts, so that no test's server finds them free.

    Every embedded Lab a test starts (its own, a dashboard's, a CLI's) prefers 8000-8002 and takes them when free:
    two workers would both find them free and race to bind. Test runs beside each other (several people on one
    machine) take turns by a lock: the next holder binds the moment the last one lets go. A port something else
    serves on (a dashboard) is not free for a test either; it is taken over once let go.
    """

    LOCK = Path(tempfile.gettempdir()) / "tbl-test-preferred-ports.lock"

    def __init__(self, ports: tuple[int, ...], every_s: float = 0.02) -> None:
        self.ports, self.every_s = ports, every_s
        self.held: dict[int, socket.socket] = {}
        self._stop = threading.Event()
        self._lock = self.LOCK.open("a")
        self._thread = threading.Thread(target=self._keep, name="preferred-port-holder", daemon=True)
        self._thread.start()
        self._thread.join(0.5)  # a free machine: held before the first worker starts

    def _keep(self) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # another run holds them meanwhile
        while not self._stop.is_set() and len(self.held) < len(self.ports):
            for port in set(self.ports) - set(self.held):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    sock.bind(("127.0.0.1", port))
                    sock.listen(1)
                except OSError:
                    sock.close()
                    continue
                self.held[port] = sock
            self._stop.wait(self.every_s)

    def close(self) -> None:
        self._stop.set()
        for sock in self.held.values():
            sock.close()
        self.held.clear()
        self._lock.close()  # the lock goes with it (a thread still waiting for it ends with the process)


def pytest_configure(config):
    """Give this process its own state folder; in the controlling process, hold the preferred ports for the run."""
    # .lab/ stays the user's: the backends, logs and stores of tests go to a folder of this process (a worker gets
    # its own, not the one its controller made and handed down in the environment)
    if not os.environ.get("TBL_STATE_DIR") or os.environ.get("TBL_TEST_STATE_DIR") == os.environ["TBL_STATE_DIR"]:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        config._tbl_state = tempfile.mkdtemp(prefix=f"tbl-test-state-{worker}-")
        os.environ["TBL_STATE_DIR"] = os.environ["TBL_TEST_STATE_DIR"] = config._tbl_state
    if not hasattr(config, "workerinput"):  # the controlling process (or the only one) holds them for all
        config._tbl_ports = PortHolder(PREFERRED_PORTS)


def pytest_unconfigure(config):
    holder = getattr(config, "_tbl_ports", None)
    if holder is not None:
        holder.close()
    state = getattr(config, "_tbl_state", None)
    if state:
        shutil.rmtree(state, ignore_errors=True)


def tier_of(nodeid: str) -> str | None:
    """Return the tier of a test by its folder (tests/<tier>/...)."""
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in TIERS else None


def _module_scoped(item) -> bool:
    return any(defs[-1].scope in ("module", "class", "package") for defs in item._fixtureinfo.name2fixturedefs.values())


@pytest.hookimpl(tryfirst=True)  # before -m deselects and before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier; keep on one worker what shares one thing (Docker, the hand-started servers, a
    browser, a module-scoped fixture); hand the long ones out first and the unit tests last (they fill the ends)."""
    for item in items:
        module = item.nodeid.split("::")[0]
        tier = tier_of(item.nodeid)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
        group = ("docker" if module in DOCKER else "hand-started" if HAND_STARTED_FIXTURES & set(item.fixturenames)
                 else "chromium" if tier == "smoke" else module if _module_scoped(item) and tier != "unit" else None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        if tier == "smoke" and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BROWSER_TIMEOUT_S))
    order = {"smoke": 0, "contract": 1, "unit": 2}
    items.sort(key=lambda item: order.get(tier_of(item.nodeid) or "unit", 2))
