"""A lab for a run without a page (the study and scenario CLIs): on TRITON_URL's server, or on an embedded server
started on a temporary copy of a repository, so the folder's own configs are never written; Ctrl-C as a Cancel."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from app.paths import MODEL_REPOSITORY
from app.server.repository import ModelNameError, model_dir, model_names

LINK_ABOVE_BYTES = 16 * 2**20  # a repository copy links files this large (weights) instead of copying them


@contextlib.contextmanager
def headless_lab(repository: Path | None, model: str, lab_models: bool = False):
    """Yield (lab, where it runs) on TRITON_URL's server or an embedded one on a temporary copy of a repository: the
    one named (--model-repository), else TBL_MODEL_REPOSITORY's as the dashboard takes it, else the lab's own
    (lab_models: always the lab's own, whatever TBL_MODEL_REPOSITORY says). The repository and the model in it are
    checked before any server starts (ValueError saying what is wrong)."""
    from app.lab.root import Lab  # noqa: PLC0415 - starting a server is for a study only

    with tempfile.TemporaryDirectory(prefix="tbl-study-") as tmp, contextlib.ExitStack() as stack:
        env = dict(os.environ)
        if env.get("TRITON_URL", "").strip():
            if repository is not None:
                raise ValueError("--model-repository is for the embedded server; with TRITON_URL set, name the "
                                 "server's folder with TRITON_MODEL_REPOSITORY")
            where = f"the server at {env['TRITON_URL'].strip()}"
        else:
            source = _embedded_source(repository, None if lab_models else env.get("TBL_MODEL_REPOSITORY"), model)
            repo = Path(tmp) / "model_repository"
            shutil.copytree(source, repo, copy_function=_copy_or_link, ignore=shutil.ignore_patterns("__pycache__"))
            env["TBL_MODEL_REPOSITORY"] = str(repo)
            stack.enter_context(_state_in(Path(tmp) / "state"))
            where = f"an embedded tritonserver (a temporary copy of {source})"
        lab = Lab.create(env)  # its server answers ready from its own process (EmbeddedServer.start)
        try:
            if not lab.serves([model]):
                ready = lab.ready_models()
                raise ValueError(f"the server does not serve {model!r}; models that serve: {', '.join(ready) or 'none'}")
            yield lab, where
        finally:
            lab.close()


def _embedded_source(repository: Path | None, from_env: str | None, model: str) -> Path:
    """Return the folder the embedded server serves a copy of; ValueError when it is no folder or holds no such
    model (before any server starts, like every other refusal)."""
    named = (f"--model-repository {repository}" if repository is not None else
             f"TBL_MODEL_REPOSITORY={from_env}" if from_env and from_env.strip() else "the lab's model_repository/")
    source = Path(repository or (from_env or "").strip() or MODEL_REPOSITORY).expanduser().resolve()
    if not source.is_dir():
        raise ValueError(f"{named}: no such folder ({source})")
    try:
        model_dir(source, model)
    except ModelNameError as exc:
        there = model_names(source)
        raise ValueError(f"--model: {exc}; its models: {', '.join(there) or 'none'}") from None
    return source


@contextlib.contextmanager
def _state_in(folder: Path):
    """Keep a temporary lab's state (experiment store, logs, backends) in folder unless TBL_STATE_DIR names one (a
    study on TRITON_URL's server is kept in the lab's own state, where the dashboard on that server shows it)."""
    if os.environ.get("TBL_STATE_DIR"):
        yield
        return
    os.environ["TBL_STATE_DIR"] = str(folder)
    try:
        yield
    finally:
        os.environ.pop("TBL_STATE_DIR", None)


def _copy_or_link(src: str, dst: str) -> None:
    """Copy a repository file, or link it when it is large (weights): only configs are ever written."""
    if os.path.getsize(src) > LINK_ABOVE_BYTES:
        os.symlink(os.path.abspath(src), dst)
    else:
        shutil.copy2(src, dst)


@contextlib.contextmanager
def cancel_on_signals():
    """Yield an event that Ctrl-C or SIGTERM sets: the study stops and serves its starting config again; a second
    Ctrl-C stops at once."""
    cancel = threading.Event()

    def stop(signum, _frame) -> None:
        print(f"\nstopping ({signal.Signals(signum).name}): the starting config serves again first", file=sys.stderr,
              flush=True)
        cancel.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield cancel
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def printer():
    """Return a progress callback printing each new log line once, and what is measured now when that changes."""
    printed, now = [0], [""]

    def progress(p) -> None:
        for line in p.log[printed[0]:]:
            print(f"  {line}", flush=True)
        printed[0] = len(p.log)
        if p.current and p.current != now[0]:
            print(f"  measuring {p.current}…", flush=True)
        now[0] = p.current
    return progress
