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
