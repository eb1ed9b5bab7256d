"""Find the local process that listens on a TCP port (Linux /proc) and read the tritonserver flags it started with."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column
_MODE_FLAGS = ("--model-control-mode",)
_POLL_FLAGS = ("--repository-poll-secs",)
_REPO_FLAGS = ("--model-repository", "--model-store")


@dataclass(frozen=True)
class ServerFlags:
    """What a tritonserver command line says about model control; None where the flag is absent."""

    pid: int
    program: str
    control_mode: str | None = None
    poll_secs: str | None = None
    repositories: tuple[Path, ...] = ()

    @property
    def is_tritonserver(self) -> bool:
        """Return True when the program is a tritonserver (not a proxy or a wrapper that forwards the port)."""
        return "tritonserver" in Path(self.program).name


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """Return the socket inodes listening on port (IPv4 and IPv6, any address)."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] != "0":
                inodes.add(fields[9])
    return inodes


def listener_pid(port: int, proc: Path = Path("/proc")) -> int | None:
    """Return the pid of a process holding a socket that listens on port, or None (none, or none we may read)."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not wanted:
        return None
    for pid in _candidates(proc):
        try:
            fds = list((proc / str(pid) / "fd").iterdir())
        except OSError:  # another user's process, or gone: not ours to read
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    return pid
            except OSError:
                continue
    return None


def descends_from(pid: int, ancestor: int, proc: Path = Path("/proc")) -> bool:
    """Return True when pid is ancestor or one of its descendants (a container's entry point may start
    tritonserver), by the parent pids in /proc."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int((proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _candidates(proc: Path) -> list[int]:
    """Return every pid, tritonserver processes first (the usual answer, found without reading the others' fds)."""
    pids = [int(p.name) for p in proc.iterdir() if p.name.isdigit()]

    def comm(pid: int) -> str:
        try:
            return (proc / str(pid) / "comm").read_text().strip()
        except OSError:
            return ""

    return sorted(pids, key=lambda pid: "tritonserver" not in comm(pid))


def read_flags(pid: int, proc: Path = Path("/proc")) -> ServerFlags | None:
    """Return the control flags of process pid's command line; None when it cannot be read."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    argv = [arg.decode(errors="replace") for arg in raw.split(b"\0") if arg]
    if not argv:
        return None  # a zombie, or a kernel thread
    try:
        cwd = Path(os.readlink(proc / str(pid) / "cwd"))
    except OSError:
        cwd = None
    return parse_flags(pid, argv, cwd)


def parse_flags(pid: int, argv: list[str], cwd: Path | None = None) -> ServerFlags:
    """Parse `--flag=value` and `--flag value` forms; the last mode wins, every repository counts (in order)."""
    mode = poll = None
    repos: list[Path] = []
    args = iter(argv[1:])
    for arg in args:
        name, eq, value = arg.partition("=")
        if name not in (*_MODE_FLAGS, *_POLL_FLAGS, *_REPO_FLAGS):
            continue
        if not eq:
            value = next(args, "")
        if name in _MODE_FLAGS:
            mode = value.strip().lower()
        elif name in _POLL_FLAGS:
            poll = value.strip()
        elif value:
            path = Path(value)
            # A relative repository is relative to the server's working directory, not ours; s3:// and gs:// stay.
            local = "://" not in value and not path.is_absolute() and cwd is not None
            repos.append(cwd / path if local else path)
    return ServerFlags(pid, argv[0], mode, poll, tuple(repos))
