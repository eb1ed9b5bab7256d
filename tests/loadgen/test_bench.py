"""bench: perf_analyzer comes out of a cached wheel with its libraries linked under plain names."""
from __future__ import annotations

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


def _watch(lib: str, ready, stop, missing, looks) -> None:
    """Look whether `lib` resolves until stop is set (a worker's perf_analyzer starting); count the misses."""
    import os  # noqa: PLC0415

    ready.set()
    seen = gone = 0
    while not stop.is_set():
        seen += 1
        gone += not os.path.exists(lib)
    missing.value, looks.value = gone, seen


def test_linking_again_never_leaves_a_library_missing_for_a_perf_analyzer_starting_meanwhile(tmp_path):
    """Two test workers share .lab/bench: each links the libraries, then runs perf_analyzer. Linking by unlink and
    symlink left a moment with no libb64.so.0d, and the other worker's perf_analyzer failed to start in it (a
    clean-clone run of 2026-12-04). A process looking all the while finds the libraries at every look."""
    import multiprocessing  # noqa: PLC0415

    wheel = tmp_path / f"tritonclient-{WHEEL_VERSION}-py3-none-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(MEMBER, b"#!/bin/sh\necho fake\n")
    ensure_perf_analyzer(tmp_path)
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Event(), context.Event()
    missing, looks = context.Value("i", -1, lock=False), context.Value("i", 0, lock=False)
    watcher = context.Process(target=_watch, args=(str(tmp_path / "libs" / "libb64.so.0d"), ready, stop, missing,
                                                   looks))
    watcher.start()
    try:
        assert ready.wait(60), "the watching process did not start"
        for _ in range(3000):
            ensure_perf_analyzer(tmp_path)
    finally:
        stop.set()
        watcher.join(30)
    assert looks.value > 1000 and missing.value == 0, f"libb64.so.0d missing at {missing.value} of {looks.value} looks"
