"""Spawn child processes that die with this process, whatever thread asked for them."""
from __future__ import annotations

import ctypes
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
DUMPABLE_ENV = "TBL_DUMPABLE"  # "1": keep the dashboard process readable (py-spy profiling by the same user)


def _die_with_parent() -> None:
    # The kernel signals the child when the *thread* that forked it ends, hence one
    # long-lived launcher thread instead of forking from Streamlit's short script threads.
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def seal_process(environ=None) -> bool:
    """Make this process non-dumpable: other processes of the same user (a model's Python code run by the server,
    a load generator) can then no longer read its memory or /proc/<pid>/environ, where the operator token lives.
    Returns whether it was sealed (Linux only; TBL_DUMPABLE=1 leaves it readable, e.g. for py-spy)."""
    import os  # noqa: PLC0415

    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or env.get(DUMPABLE_ENV) == "1":
        return False
    return ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


class Launcher:
    """Own one daemon thread that forks every server this process starts."""

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="tbl-launcher", daemon=True)
        self._thread.start()

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start argv in a new session, tied to this process's life; return its Popen."""
        future: Future = Future()
        self._requests.put((future, argv, kwargs))
        return future.result()

    def _serve(self) -> None:
        while True:
            future, argv, kwargs = self._requests.get()
            try:
                proc = subprocess.Popen(argv, start_new_session=True, preexec_fn=_die_with_parent, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                future.set_exception(exc)
            else:
                future.set_result(proc)


_launcher: Launcher | None = None
_lock = threading.Lock()


def launcher() -> Launcher:
    """Return the process-wide launcher."""
    global _launcher
    with _lock:
        if _launcher is None:
            _launcher = Launcher()
        return _launcher
