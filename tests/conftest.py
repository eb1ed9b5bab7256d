"""Shared fixtures: one real tritonserver per test session (per xdist worker), on free ports, on a copy of the
repository; and how the suite splits into scripts/lab.sh test's two passes (parallel, then quiet)."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

# One BLAS thread in every process the tests start (they inherit it; the servers' allowlist passes it to every
# Python stub): numpy's OpenBLAS otherwise starts a thread per core in each stub, and a model load's stubs cost
# 0.48 s of CPU instead of 0.28 s (ten reloads of gpu_sim, 2026-12-04) -- about 1,900 stubs start in a run, on two
# cores the first pass shares. No model of the lab, nor a test, computes with BLAS threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.embedded import EmbeddedServer, ServerOptions, group_alive
from app.server.endpoint import Endpoint, port_options
from tests.helpers import copy_of_the_lab_repository, descendants
from tests.quiet_lane import after_the_first_pass, alone_while_the_first_pass_runs


@dataclass
class TritonFixture:
    """A running embedded server and the repository copy it serves."""

    server: EmbeddedServer
    endpoint: Endpoint
    repo: Path
    pristine: Path

    @property
    def url(self) -> str:
        return self.endpoint.http_url

    def lab_env(self, **more: str) -> dict[str, str]:
        """Return the variables that point a Lab at this server as a remote one (its control key included)."""
        return {"TRITON_URL": self.url, "TRITON_GRPC_URL": self.endpoint.grpc_url,
                "TRITON_METRICS_URL": self.endpoint.metrics_url, "TRITON_MODEL_REPOSITORY": str(self.repo),
                "TRITON_CONTROL_KEY": self.endpoint.control_key or "", **more}

    def counts(self) -> dict:
        """Return every model's (requests answered or failed, pending) from /metrics."""
        from app.metrics.scrape import fetch_text, parse_metrics  # noqa: PLC0415

        scrape = parse_metrics(fetch_text(self.endpoint.metrics_url), 0.0)
        return {name: (v.counters.get("nv_inference_request_success", 0.0) + sum(v.failures.values()), v.pending)
                for name, v in scrape.models.items()}

    def wait_idle(self, timeout_s: float = 60.0) -> None:
        """Wait until no request is pending and no count moves for half a second (a test's stragglers are done)."""
        import time  # noqa: PLC0415

        deadline = time.monotonic() + timeout_s
        last = self.counts()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.counts()
            if now == last and all(not pending for _, pending in now.values()):
                return
            last = now
        pytest.fail(f"the server did not go idle within {timeout_s:.0f} s: {last}")

    def restore(self, model: str) -> None:
        """Put a model's pristine config.pbtxt back and reload it from the file (with the server's control key)."""
        import tritonclient.http as http  # noqa: PLC0415

        shutil.copyfile(self.pristine / model / "config.pbtxt", self.repo / model / "config.pbtxt")
        http.InferenceServerClient(self.endpoint.host_port).load_model(model, headers=self.endpoint.control_headers)

    def revive(self) -> str:
        """Start the session server again after it died: its repository as the lab ships it, on the ports it had
        where they are free. Return what the dead one said (exit code, its log's last lines; the log is kept
        beside the new one as *.died-<epoch>).

        Triton 2.51 can die on a reload under load (ci320, 2026-12-05: "Signal (11)" in pthread_mutex_lock 0.2 s
        after gpu_sim loaded again, as in triton-inference-server/server#7723): without this every later test of
        the worker failed on a dead server (86 errors after the one failure)."""
        server = self.server
        code = server.proc.returncode if server.proc is not None else None
        said = f"tritonserver exited with code {code}; its log ended:\n{server.log_tail(25)}"
        server.stop()
        if server.log_path is not None and server.log_path.exists():
            server.log_path.rename(server.log_path.with_name(f"{server.log_path.name}.died-{int(time.time())}"))
        shutil.rmtree(self.repo)
        shutil.copytree(self.pristine, self.repo, ignore=shutil.ignore_patterns("__pycache__"))
        server.options = replace(server.options, **port_options(self.endpoint))
        self.endpoint = server.start()
        return said


_SESSION_SERVERS: list[EmbeddedServer] = []  # the triton fixture's, while it serves


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> TritonFixture:
    """Start one real tritonserver for the session; stop it and all its stubs at the end."""
    base = tmp_path_factory.mktemp("triton")
    repo = copy_of_the_lab_repository(base, "model_repository")
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                          log_dir=base))
    endpoint = server.start()
    _SESSION_SERVERS.append(server)
    yield TritonFixture(server, endpoint, repo, MODEL_REPOSITORY)
    pgid = server.proc.pid if server.proc is not None else None  # TritonFixture.revive may have started another
    server.stop()
    _SESSION_SERVERS.remove(server)
    if pgid is not None and group_alive(pgid):  # pragma: no cover - stop() failed to clean up
        os.killpg(pgid, signal.SIGKILL)
        pytest.fail("tritonserver left processes behind after stop()")


@pytest.fixture
def restore_model(triton):
    """Restore the named models' pristine configs after the test."""
    touched: list[str] = []
    yield touched.append
    for model in touched:
        triton.restore(model)


@pytest.fixture(autouse=True)
def _server_idle_after(request):
    """After a test that used the server, wait for its last requests: the next test's counts start clean.

    A test that sent nothing (every model's counts as they were when it began, nothing pending) needs no
    wait (~40 tests; each saves the half second of stillness).
    """
    triton = request.getfixturevalue("triton") if "triton" in request.fixturenames else None
    if triton is not None and not triton.server.running():  # died after the last test's check
        print("the session server had died; started again:", triton.revive())
    before = triton.counts() if triton is not None else None
    yield
    if triton is None:
        return
    if not triton.server.running():  # the test failed on it too, most likely: this says why
        pytest.fail(f"the session server died during this test and was started again. {triton.revive()}")
    now = triton.counts()
    if now == before and all(not pending for _, pending in now.values()):
        return
    triton.wait_idle()


@pytest.fixture
def gpu_sim_lab(triton, restore_model, tmp_path, monkeypatch):
    """A Lab driving the session server (remote mode), its state in tmp_path; gpu_sim's config restored after."""
    from app.lab.root import Lab  # noqa: PLC0415

    monkeypatch.setenv("TBL_STATE_DIR", str(tmp_path))
    restore_model("gpu_sim")
    lab = Lab.create(triton.lab_env())
    yield lab
    lab.close()


@pytest.fixture(scope="module")
def playwright_module(request):
    """Playwright for one module's browsers. Its sync API leaves an event loop running in this thread while it is
    open: a second sync_playwright() fails, and so does any later asyncio.run(), so it closes with its module (the
    module's tests stay together on one worker: tests/conftest.py groups them)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with browser_priority(request.config), sync_playwright() as pw:
        yield pw


BROWSER_NICE = -5  # see browser_priority


@contextmanager
def browser_priority(config):
    """In the first pass, run a browser module's worker, and what it starts meanwhile (Playwright's driver, Chromium,
    the dashboards), ahead of the other workers' tests: on two cores with four workers a page took over 60 s to draw
    a radio button, and four browser tests failed in every run on a slow host (2026-12-02). What they assert is the
    page's behaviour, not its speed; the quiet pass (timing) leaves priorities alone. Needs root (CI has it);
    otherwise nothing changes."""
    quiet = "quiet" in (config.option.markexpr or "") and "not quiet" not in config.option.markexpr
    before = os.getpriority(os.PRIO_PROCESS, 0)
    keeper = None
    try:
        if not quiet:
            os.setpriority(os.PRIO_PROCESS, 0, BROWSER_NICE)
            keeper = NiceKeeper(os.getpid(), BROWSER_NICE)
    except PermissionError:
        pass
    try:
        yield
    finally:
        if keeper is not None:
            keeper.close()
        try:
            os.setpriority(os.PRIO_PROCESS, 0, before)
        except PermissionError:
            pass


class NiceKeeper:
    """Hold every thread this process starts, at any depth, at `nice` or ahead of it, once a second.

    Chromium sets the priority of its renderer threads itself (nice 0, or 5 for one in the background), so the
    nice they inherit is lost exactly where a browser test's page draws: in the first pass a page's main thread ran
    10-34 s long tasks while the other workers' servers took the cores, and a click waited past 60 s for two
    animation frames (the render log of tests/ui/conftest.py; 2026-12-02). Threads already ahead stay as they are.
    """

    def __init__(self, root: int, nice: int, every_s: float = 1.0) -> None:
        self.root, self.nice, self.every_s = root, nice, every_s
        self.raised = self.rounds = 0  # threads moved ahead, rounds done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="browser-nice-keeper", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(self.every_s):
            for proc in descendants(self.root):
                for tid in _threads(proc.pid):
                    try:
                        if os.getpriority(os.PRIO_PROCESS, tid) > self.nice:
                            os.setpriority(os.PRIO_PROCESS, tid, self.nice)
                            self.raised += 1
                    except OSError:  # gone meanwhile, or not ours to change
                        continue
            self.rounds += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _threads(pid: int) -> list[int]:
    """Return a process's thread ids (nice is a thread's on Linux), none when it is gone."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


# --- the two passes (scripts/lab.sh test) -------------------------------------------------------------------------
# Quiet tests: their assertions rest on the timing of a live system (throughput or latency ratios, A/B verdicts,
# sweeps' operating points, the guided scenarios' claims, send lateness, live histograms). Their margins were measured
# beside at most one busy core (stress-ng --cpu 1), so they run in a second pass with one quiet neighbour at most,
# never beside the first pass's workers. A node id prefix: a module, or one test (all its parameters).
QUIET = (
    "tests/scenarios/test_scenarios.py",
    "tests/experiments/test_ab.py",
    "tests/experiments/test_cli.py::test_a_gpu_sim_ab_from_knobs_finds_the_difference_it_requires",
    "tests/app/test_autopilot_loop.py::test_it_acts_on_overload_within_bounds_and_replays",
    "tests/experiments/test_sweep.py::test_a_small_sweep_finds_the_operating_point_the_cost_model_implies",
    "tests/experiments/test_third_party_studies.py::test_an_ab_on_a_model_without_config_pbtxt_reaches_a_verdict_and_"
    "leaves_no_file",
    "tests/models/test_gpu_sim.py",
    "tests/models/test_token_sim.py::test_a_request_batch_lasts_as_long_as_its_longest_member",
    "tests/models/test_token_sim.py::test_in_flight_batching_lets_a_newcomer_join_at_the_next_step",
    "tests/app/test_diagnosis_live.py",
    "tests/ui/test_experiments_page.py::test_a_sweep_defined_on_the_page_lands_its_operating_point_and_an_ab_gives_a_"
    "verdict",
    "tests/ui/test_experiments_page.py::test_a_concept_page_runs_its_scenario_and_shows_the_verdict",
    "tests/ui/test_browser.py::test_raising_the_delay_moves_the_live_histogram",
    "tests/ui/test_browser.py::test_a_rate_the_generator_cannot_send_is_warned_about",
    # a live screen read between two redraws: in a first pass beside the quiet one the page redrew for 90 s unpaused
    "tests/ui/test_demo_screen.py::test_the_projector_screens_idle_during_a_scenario_and_after_its_verdict",
    "tests/loadgen/test_priority_server.py::test_higher_priority_class_gets_the_lower_p99_under_overload",
    "tests/loadgen/test_run_server.py",
    "tests/loadgen/test_drivers.py::test_closed_loop_keeps_n_in_flight_and_resizes",
    "tests/loadgen/test_storm_server.py::test_retry_storm_then_cure",
    "tests/loadgen/test_worker.py::test_a_busy_dashboard_process_does_not_disturb_the_workers_pacing",
    "tests/loadgen/test_grpc_server.py::test_open_loop_sends_on_schedule_and_gets_every_response",
    "tests/loadgen/test_grpc_server.py::test_a_request_past_its_timeout_is_given_up_and_its_stream_carries_on",
    "tests/config/test_apply.py::test_hot_reload_under_sustained_load",
    "tests/experiments/test_trace_sweep.py::test_a_trace_judged_sweep_recommends_the_fewest_instances_that_hold_the_"
    "crowd",
    "tests/experiments/test_trace_sweep.py::test_an_ab_on_a_trace_plays_it_whole_each_trial_and_is_judged_on_the_trace",
)
# The quiet tests that wait for the first pass's end (tests/quiet_lane.py) and are handed out last. The guided
# scenarios' claims wait for it: `patterns` read p99 fixed / before 0.90 where <= 0.75 is claimed, alone in the lane
# beside the first pass's last minute (2026-12-04; 0.34-0.43 after it); the two Experiments-page studies, long and
# waiting as well, end the queue with them. They run in four lanes of about a minute each, one a worker (an xdist
# group each), balanced by their seconds four at a time after the first pass (below). Handed out
# one by one, a worker waiting for the first pass with two tests or fewer took another (xdist's loadgroup tops a
# worker up at two pending), so two of the four took two long ones each and the pass ended 60-76 s after the first
# where a balanced spread takes about 57 (2026-12-05). A lane of three or more takes nothing more while it waits;
# the one of two (`patterns`, the longest) is handed out last, when nothing is left to take.
_CLAIM = "tests/scenarios/test_scenarios.py::test_the_scenario_reproduces_its_claim"
TAIL_LANES = {  # seconds: each test's in two whole runs of 365e516 (ci256, ci257), four lanes at once; the lanes
    # took 58-62, 61-62, 44-46 and 54-58 s as they were there
    "tail-1": (f"{_CLAIM}[queue-delay]",  # 31.2-32.6
               f"{_CLAIM}[mixed-traffic]",  # 11.7-12.6
               f"{_CLAIM}[variable-shapes]"),  # 13.6-14.0
    "tail-2": (f"{_CLAIM}[instance-sweep]",  # 26.3-27.3
               f"{_CLAIM}[three-batchings]",  # 13.6-14.4
               f"{_CLAIM}[instances-x-batching]"),  # 14.9-15.9
    "tail-3": (f"{_CLAIM}[retry-storm]",  # 15.2-15.7
               # 15.5-16.8
               "tests/scenarios/test_scenarios.py::test_the_cli_lists_them_and_runs_one_headless_with_json",
               "tests/ui/test_experiments_page.py::test_a_sweep_defined_on_the_page_lands_its_operating_point_and_"
               "an_ab_gives_a_verdict"),  # 20.8-21.0
    "tail-4": (f"{_CLAIM}[patterns]",  # 38.1-40.4
               # 16.3-17.7
               "tests/ui/test_experiments_page.py::test_a_concept_page_runs_its_scenario_and_shows_the_verdict"),
}
# In the lanes' order; a claim no lane names (a scenario added since) waits too and is handed out after them.
TAIL = (*(prefix for lane in TAIL_LANES.values() for prefix in lane), _CLAIM)
# Tests that share one thing outside their process run on one worker, in turn: the Docker daemon (the lab's local
# image tag, containers named by port) and the image builds of tests/deploy.
GROUPS = {"docker": ("tests/server/test_docker_server.py", "tests/deploy/test_compose.py")}
# The modules whose tests use a hand-started server (tests/server/hand_started.py: session fixtures, one server per
# mode and worker) run on one worker: scattered over four workers, each mode's server of ten models and their
# Python stubs started four times.
HAND_STARTED = "hand-started"
HAND_STARTED_FIXTURES = {"none_server", "poll_server", "explicit_server"}
# Tests that drive Chromium run in two lanes, each on one worker, balanced by measured serial durations: test_browser
# and test_deep_links against the rest. Groups hold only with pytest below 9.2 (tests/test_groups.py): every run until
# 2026-12-04 had pytest 9.2, its tests spread over the workers whatever their group. With the groups held, both
# passes at once on a quiet host: each lane 125-186 s of a first pass of 6-7 minutes (docs/MEASUREMENTS.md).
BROWSER_LANES = {"tests/ui/test_browser.py": "chromium-1", "tests/ui/test_deep_links.py": "chromium-1"}
BROWSER_GROUP = "chromium-2"  # every other test that drives Chromium
CHROMIUM = "chromium"  # what a module's tests share when one of them drives Chromium (not a lane's name)
# A Chromium lane's test without a timeout of its own gets this one, not the suite's 300 s: what they assert is a
# page's behaviour, each wait bounded; the timeout only ends a hang. In a first pass on a slow host (the CI run of
# 2026-12-02, 1,865 s) two passed the 300 s while drawing; under a 1.1-CPU quota they took 184 and 288 s.
BROWSER_TIMEOUT_S = 600
# Live tests (not in --quick): they use a fixture below, or their module starts a process of its own.
LIVE_FIXTURES = {"triton", "dashboard", "embedded_dashboard", "numpy2_dashboard", "browser", "playwright_module",
                 "none_server", "poll_server", "explicit_server"}
STARTS_A_PROCESS = re.compile(r"EmbeddedServer|Lab\.create|embedded_lab|start_by_hand|start_fanout|subprocess|Popen|"
                              r"AppTest|open_page|docker|streamlit")
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


def _under(nodeid: str, prefixes) -> bool:
    """Return True when nodeid is a test of one of the modules or tests named (any of its parameters)."""
    return any(nodeid.startswith(p) and nodeid[len(p):len(p) + 1] in ("", ":", "[") for p in prefixes)


def _tail_rank(nodeid: str) -> int:
    """Return a test's place in TAIL (the first entry naming it), -1 for a test not in it."""
    return next((rank for rank, prefix in enumerate(TAIL) if _under(nodeid, (prefix,))), -1)


def _tail_lane(nodeid: str) -> str | None:
    """Return the TAIL_LANES lane naming a test, None for one no lane names."""
    return next((lane for lane, prefixes in TAIL_LANES.items() if _under(nodeid, prefixes)), None)


def _lane(nodeid: str) -> str:
    """Return the Chromium lane of a test: the first entry of BROWSER_LANES naming it (a test before its module)."""
    return next((lane for prefix, lane in BROWSER_LANES.items() if _under(nodeid, (prefix,))), BROWSER_GROUP)


def _module_scoped(item) -> bool:
    return any(defs[-1].scope in ("module", "class", "package") for defs in item._fixtureinfo.name2fixturedefs.values())


def pytest_ignore_collect(collection_path, config):
    """The quiet pass (`-m quiet`, scripts/lab.sh's QUIET_PASS) imports only the modules that hold a QUIET test: its
    four workers start beside the first pass's four, and collecting every module cost each 2.5 s of CPU."""
    if config.option.markexpr != "quiet" or collection_path.suffix != ".py" or not collection_path.name.startswith(
            "test_"):
        return None
    try:
        module = collection_path.relative_to(ROOT).as_posix()
    except ValueError:
        return None
    return None if any(prefix.split("::")[0] == module for prefix in QUIET) else True


@pytest.hookimpl(tryfirst=True)  # before -m deselects and before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark quiet and live tests; keep together on one worker the tests of a GROUPS resource, of a module with a
    Chromium test, and of a module-scoped fixture (scattered over workers, it would start once per visit)."""
    starts: dict[str, bool] = {}
    modules: dict[str, set[str]] = {}  # module -> what its tests share: "chromium", "module"
    long: dict[str, bool] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        if module not in starts:
            starts[module] = bool(STARTS_A_PROCESS.search(Path(str(item.fspath)).read_text(errors="replace")))
        if "playwright_module" in item.fixturenames:
            modules.setdefault(module, set()).add(CHROMIUM)
        elif HAND_STARTED_FIXTURES & set(item.fixturenames):
            modules.setdefault(module, set()).add(HAND_STARTED)
        elif _module_scoped(item):
            modules.setdefault(module, set()).add("module")
    for item in items:
        module = item.nodeid.split("::")[0]
        if _under(item.nodeid, QUIET):
            item.add_marker(pytest.mark.quiet)
            if _tail_rank(item.nodeid) >= 0:
                item.add_marker(pytest.mark.after_first_pass)
        if starts[module] or LIVE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.live)
        shares = modules.get(module, set())
        group = _tail_lane(item.nodeid) or next(
            (name for name, prefixes in GROUPS.items() if _under(item.nodeid, prefixes)),
            _lane(item.nodeid) if CHROMIUM in shares else HAND_STARTED if HAND_STARTED in shares
            else module if shares else None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        if group and group.startswith("chromium") and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BROWSER_TIMEOUT_S))
        long[item.nodeid] = group is not None and (group.startswith("chromium") or group in (*GROUPS, HAND_STARTED))
    # the long lanes (Chromium, Docker, hand-started servers) first: handed out last, they would end the pass alone;
    # the quiet TAIL last, lane by lane; the unit tests after the other live tests: a thousand tests of ~20 ms
    # fill the workers' ends evenly, where a 26 s page test handed out last ended the first pass alone for 35 s
    # (2026-12-04). (The lane's short loadgen and token_sim tests handed out last, to spread what is left of it when
    # the first pass ends first: they ran in the first pass's last minute in the slow runs, and token_sim's in-flight
    # test read its newcomer late there, ci264; not kept.)
    items.sort(key=lambda item: (not long[item.nodeid], _tail_rank(item.nodeid),
                                 item.get_closest_marker("live") is None))


def pytest_collection_finish(session):
    """A first-pass worker says it has collected (scripts/lab.sh starts the quiet pass once all have)."""
    _mark_first_pass_worker("TBL_FIRST_PASS_COLLECTED")


def _mark_first_pass_worker(variable: str) -> None:
    """Touch PREFIX.gwN, PREFIX the environment's `variable` (scripts/lab.sh counts a first-pass worker's marks)."""
    flag, worker = os.environ.get(variable), os.environ.get("PYTEST_XDIST_WORKER")
    if flag and worker:
        Path(f"{flag}.{worker}").touch()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """At the session's last teardown the session's servers are asked to stop all at once (tests/server/hand_started.py
    ask_all_to_stop); once they have, a first-pass worker says it has ended (scripts/lab.sh lets the quiet tests that
    wait for the first pass go once every worker has). Marked before the teardown, the tail's first claims were
    measured while four workers stopped their servers and browsers: ci302 (2026-12-05) measured queue-delay's
    low-load median 4 ms high there, and failed its claim (0.60 where 0.98-1.00)."""
    if nextitem is None:
        # the session node's finalizers run last in, first out: this one before the session fixtures' own, after
        # every function's and module's (the servers serve those to their end)
        item.session.addfinalizer(_ask_session_servers_to_stop)
    yield
    if nextitem is None:
        _mark_first_pass_worker("TBL_FIRST_PASS_DONE")


def _ask_session_servers_to_stop() -> None:
    from tests.server.hand_started import ask_all_to_stop  # noqa: PLC0415

    ask_all_to_stop()
    for server in _SESSION_SERVERS:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A quiet test runs alone while the first pass runs beside the quiet pass, one of TAIL only once it has ended
    (tests/quiet_lane.py): its setup (the worker's server, a module's lab), call and teardown."""
    flag = os.environ.get("TBL_FIRST_PASS_RUNNING") if item.get_closest_marker("quiet") else None
    after = item.get_closest_marker("after_first_pass") is not None
    with after_the_first_pass(flag) if after else alone_while_the_first_pass_runs(flag):
        yield
