"""Where a study ran: server version, machine and software, for reports read by people who were not there.

It also says what a reader could not tell from a commit alone: whether any file of the model repository differed
from the commit it names (a config edited by the lab's own Applies, say), and whether the model is a simulation.
"""
from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

from app.config.errors import ConfigError
from app.config.model_config import parse_config
from app.lab.ports import StudyLab
from app.config.batching_fit import KIND_PARAMETER
from app.paths import ROOT

GIT_TIMEOUT_S = 5.0
# The parameters of the lab's labelled cost models (gpu_sim, token_sim): a model whose config sets them sleeps
# for a simulated device's time instead of computing; what it measures is the server around a made-up device.
COST_MODEL_PARAMETERS = frozenset({"launch_overhead_us", "compute_us_batch1"})


def environment(lab: StudyLab, model: str) -> dict:
    """Return the server's version and address kind, the machine (CPU, cores, memory) and the lab's commit."""
    status = lab.status()
    return {
        "server_version": status.version or "unknown",
        "server": "embedded tritonserver" if lab.server_facts().embedded else f"remote {lab.server_facts().endpoint.http_url}",
        "model": model,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpus": _gpus(lab, model),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "lab_commit": _commit(),
        **repository_state(lab.server_facts().repository),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def simulated(config_text: str) -> str:
    """Return what simulated device a config's model is ('' for a real model): a labelled cost model sets
    COST_MODEL_PARAMETERS in its config's parameters."""
    try:
        params = parse_config(config_text).parameters
    except (ConfigError, ValueError):
        return ""
    if not COST_MODEL_PARAMETERS <= set(params):
        return ""
    what = ("a simulated token generator" if params[KIND_PARAMETER].string_value == "autoregressive"
            else "a simulated GPU") if KIND_PARAMETER in params else "a simulated GPU"
    return (f"{what} (a labelled cost model: its compute is a sleep set by {', '.join(sorted(COST_MODEL_PARAMETERS))} "
            "and the other cost parameters). The server, its scheduler, queues, batching and the metrics are real; "
            "the device times are made up, so the figures describe the lab's model of a device, not a real one.")


def _git(repo: Path, *args: str) -> str | None:
    """Return git's output for args run in repo (no shell), None when git is missing, fails or takes too long.

    --no-optional-locks: `git status` would otherwise refresh the index under index.lock, and a commit made at
    that moment in the same checkout would fail on the lock."""
    try:
        out = subprocess.run(["git", "--no-optional-locks", "-C", str(repo), *args], capture_output=True, text=True,
                             timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def repository_state(repo: Path | str | None) -> dict:
    """Return the model repository's folder, the git commit it is at and the files under it that differ from that
    commit (modified, added, deleted or untracked, paths relative to the folder); commit and changes are None
    where it is not in git (or git is missing), the folder None when the lab cannot see it (a remote server)."""
    if repo is None:
        return {"repository": None, "repository_commit": None, "repository_changes": None}
    folder = Path(repo).resolve()
    top, commit = _git(folder, "rev-parse", "--show-toplevel"), _git(folder, "rev-parse", "--short", "HEAD")
    status = _git(folder, "status", "--porcelain", "-z", "--untracked-files=all", "--", ".")
    if top is None or commit is None or status is None:
        return {"repository": str(folder), "repository_commit": None, "repository_changes": None}
    root = Path(top.strip())
    return {"repository": str(folder), "repository_commit": commit.strip() or None,
            "repository_changes": _changed_paths(status, root, folder)}


def _changed_paths(status: str, root: Path, folder: Path) -> list[str]:
    """Return the paths of `git status --porcelain -z` (relative to the git root) relative to folder, sorted."""
    entries, out = status.split("\0"), []
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        out.append(entry[3:])
        if entry[0] in "RC" and i < len(entries):  # its source follows, with no status of its own
            if entry[0] == "R":  # a renamed file is gone from where the commit has it; a copy's source is not
                out.append(entries[i])
            i += 1
    rel = []
    for path in out:
        try:
            rel.append(str((root / path).relative_to(folder)))
        except ValueError:
            rel.append(path)
    return sorted(set(rel))


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


def _gpus(lab: StudyLab, model: str) -> str:
    latest = lab.server_view(model, window_s=30).latest or {}
    total = latest.get("gpu_mem_total_bytes")
    return "none reported by the server" if total is None else f"GPU memory {total / 2**30:,.1f} GiB in all"


def _commit() -> str:
    return (_git(ROOT, "rev-parse", "--short", "HEAD") or "").strip() or "unknown"
