"""Where a study ran: server version, machine and software, for reports read by people who were not there."""
from __future__ import annotations

import os
import platform
import subprocess
import time

from app.paths import ROOT


def environment(lab, model: str) -> dict:
    """Return the server's version and address kind, the machine (CPU, cores, memory) and the lab's commit."""
    status = lab.status()
    return {
        "server_version": status.version or "unknown",
        "server": "embedded tritonserver" if lab.embedded else f"remote {lab.endpoint.http_url}",
        "model": model,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpus": _gpus(lab, model),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "lab_commit": _commit(),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _gpus(lab, model: str) -> str:
    latest = lab.metrics.snapshot(model, window_s=30).latest or {}
    total = latest.get("gpu_mem_total_bytes")
    return "none reported by the server" if total is None else f"GPU memory {total / 2**30:,.1f} GiB in all"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"
