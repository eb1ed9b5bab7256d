"""bench: perf_analyzer comes out of a cached wheel with its libraries linked under plain names, each file replaced
by a rename so that a perf_analyzer starting meanwhile never finds one missing."""
from __future__ import annotations

import os
import zipfile

from bench.perf_analyzer import MEMBER, WHEEL_VERSION, _replace, ensure_perf_analyzer


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


def test_a_link_made_again_is_there_at_every_moment(tmp_path):
    """Two runs share the cache: linking by unlink and symlink left a moment with no libb64.so.0d, and the other
    run's perf_analyzer failed to start in it (2026-12-04). The old link stays until the new one is renamed over it."""
    old, new = tmp_path / "old.so", tmp_path / "new.so"
    old.write_bytes(b"old")
    new.write_bytes(b"new")
    link = tmp_path / "libb64.so.0d"
    link.symlink_to(old)
    seen = []

    def make(tmp):
        seen.append(os.readlink(link))  # while the new link is made, the old one still resolves
        tmp.symlink_to(new)

    _replace(link, make)
    assert seen == [str(old)] and os.readlink(link) == str(new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["libb64.so.0d", "new.so", "old.so"]  # no temporary left
