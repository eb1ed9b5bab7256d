"""bench: perf_analyzer comes out of a cached wheel with its libraries linked under plain names."""
from __future__ import annotations

import subprocess
import sys
import zipfile

from bench.perf_analyzer import MEMBER, WHEEL_VERSION, ensure_perf_analyzer


def test_perf_analyzer_is_extracted_from_the_cached_wheel(tmp_path):
    wheel = tmp_path / f"tritonclient-{WHEEL_VERSION}-py3-none-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(MEMBER, b"#!/bin/sh\necho fake\n")
    binary, env = ensure_perf_analyzer(tmp_path)
    assert binary.read_bytes().startswith(b"#!/bin/sh") and binary.stat().st_mode & 0o111
    libs = tmp_path / "libs"
    assert {p.name for p in libs.iterdir()} == {"libb64.so.0d", "libcudart.so.12"}
    assert all(p.resolve().exists() for p in libs.iterdir())
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(libs)


WATCH = """
import os, sys
lib, stop = sys.argv[1], sys.argv[2]
print("ready", flush=True)
seen = gone = 0
while not os.path.exists(stop):
    seen += 1
    gone += not os.path.exists(lib)
print(gone, seen, flush=True)
"""


def test_linking_again_never_leaves_a_library_missing_for_a_perf_analyzer_starting_meanwhile(tmp_path):
    """Two test workers share .lab/bench: each links the libraries, then runs perf_analyzer. Linking by unlink and
    symlink left a moment with no libb64.so.0d, and the other worker's perf_analyzer failed to start in it (a
    clean-clone run of 2026-12-04). A process looking all the while finds the libraries at every look."""
    wheel = tmp_path / f"tritonclient-{WHEEL_VERSION}-py3-none-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(MEMBER, b"#!/bin/sh\necho fake\n")
    ensure_perf_analyzer(tmp_path)
    stop = tmp_path / "stop"
    watcher = subprocess.Popen([sys.executable, "-c", WATCH, str(tmp_path / "libs" / "libb64.so.0d"), str(stop)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout.readline().strip() == "ready"
        for _ in range(3000):
            ensure_perf_analyzer(tmp_path)
    finally:
        stop.touch()
        out, _ = watcher.communicate(timeout=60)
    missing, looks = (int(v) for v in out.split())
    assert looks > 1000 and missing == 0, f"libb64.so.0d missing at {missing} of {looks} looks"
