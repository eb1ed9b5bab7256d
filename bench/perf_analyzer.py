"""Obtain perf_analyzer from the tritonclient 2.51.0 wheel and the libraries nvidia-pytriton bundles."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from app.server.binary import library_dir

WHEEL_VERSION = "2.51.0"  # newer wheels need glibc 2.38
MEMBER = f"tritonclient-{WHEEL_VERSION}.data/data/bin/perf_analyzer"
LIBS = {"libb64.so.0d": "libb64-*.so.0d", "libcudart.so.12": "libcudart-*.so.12*"}


def ensure_perf_analyzer(cache: Path) -> tuple[Path, dict]:
    """Return (perf_analyzer path, environment to run it with), downloading the wheel once into cache."""
    cache.mkdir(parents=True, exist_ok=True)
    binary = cache / "perf_analyzer"
    if not binary.exists():
        wheel = _download_wheel(cache)
        with zipfile.ZipFile(wheel) as archive:
            _replace(binary, lambda tmp: (tmp.write_bytes(archive.read(MEMBER)), tmp.chmod(0o755)))
    libs = cache / "libs"
    libs.mkdir(exist_ok=True)
    for name, pattern in LIBS.items():
        matches = sorted(library_dir().glob(pattern))
        if not matches:
            raise FileNotFoundError(f"no {pattern} in {library_dir()}: is nvidia-pytriton installed?")
        link = libs / name
        if not (link.is_symlink() and os.readlink(link) == str(matches[0])):
            _replace(link, lambda tmp, target=matches[0]: tmp.symlink_to(target))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libs), env.get("LD_LIBRARY_PATH")]))
    return binary, env


def _replace(path: Path, make) -> None:
    """Make a file beside `path` with make(tmp), then rename it over `path`: a process running perf_analyzer meanwhile
    (a test worker that linked the libraries earlier) never finds the file or a library missing (2026-12-04: one
    unlinked the links again while another's perf_analyzer started — "libb64.so.0d: cannot open shared object")."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    make(tmp)
    os.replace(tmp, path)


def _download_wheel(cache: Path) -> Path:
    found = sorted(cache.glob(f"tritonclient-{WHEEL_VERSION}-*.whl"))
    if found:
        return found[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"tritonclient=={WHEEL_VERSION}",
         "-d", str(cache)],
        check=True,
    )
    return sorted(cache.glob(f"tritonclient-{WHEEL_VERSION}-*.whl"))[0]


def run_perf_analyzer(binary: Path, env: dict, host_port: str, model: str, concurrency: int, shape: str,
                      interval_ms: int, csv_path: Path) -> dict:
    """Run one perf_analyzer measurement at a concurrency; return throughput and latency percentiles."""
    argv = [
        str(binary), "-m", model, "-u", host_port, "-i", "http", "--concurrency-range", str(concurrency),
        "--shape", shape, "--measurement-interval", str(interval_ms), "--max-trials", "10",
        "--stability-percentage", "50", "-f", str(csv_path),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not csv_path.exists():
        raise RuntimeError(f"perf_analyzer failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    header, row = csv_path.read_text().splitlines()[:2]
    values = dict(zip(header.split(","), row.split(",")))
    return {
        "throughput_rps": float(values["Inferences/Second"]),
        "latency_us": {q: float(values[f"{q} latency"]) for q in ("p50", "p90", "p95", "p99")},
    }
