"""The perf_analyzer command a sweep point exports uses only flags the real perf_analyzer 2.51 lists in its --help."""
from __future__ import annotations

import fcntl
import re
import subprocess

import pytest

from app.experiments.report.export import perf_analyzer_command
from app.experiments.sweep.space import CONCURRENCY, RATE
from app.paths import ROOT
from bench.perf_analyzer import ensure_perf_analyzer


@pytest.fixture(scope="session")
def perf_analyzer_help() -> str:
    """The real perf_analyzer 2.51's usage text (it prints it, exiting non-zero, for an unknown --help)."""
    cache = ROOT / ".lab" / "bench"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:  # parallel workers: one downloads, extracts and links; the rest wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        binary, env = ensure_perf_analyzer(cache)
    done = subprocess.run([str(binary), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert "==== OPTIONS ====" in done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("kind,load", [(CONCURRENCY, 4), (RATE, 120.0)])
def test_every_flag_emitted_is_one_perf_analyzer_lists(perf_analyzer_help, kind, load):
    listed = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", perf_analyzer_help))
    assert "--concurrency-range" in listed and "--no-such-flag" not in listed
    flags = [a.split("=", 1)[0] for a in perf_analyzer_command("localhost:8000", "gpu_sim", kind, load, 50.0)
             if a.startswith("-")]
    assert flags and set(flags) <= listed, set(flags) - listed
