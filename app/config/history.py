"""Keep every config version a model served: one JSON file per version, written atomically, holding note and text.

Each version is `<id>.json` (its Version fields and `text`), written to a temporary file and renamed into place,
so a kill at any moment leaves either the whole version or none of it. Histories from before kept two files per
version (`<id>.pbtxt` then `<id>.json`); they are read as they are. A version that is incomplete (a kill between
the two old files) or unreadable is skipped and reported by `problems()`, never raised while listing.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from app.config.errors import HistoryError, clean
from app.config.model_config import write_text_atomic
from app.paths import state_dir

_ID = re.compile(r"^(\d+)-[0-9TZ]+$")


class Action(str, Enum):
    """How a version came to serve."""

    BASELINE = "baseline"  # found on disk/server before the app changed it
    APPLY = "apply"
    UNDO = "undo"
    ROLLBACK = "rollback"


@dataclass(frozen=True)
class Version:
    """One recorded config of one model."""

    id: str
    model: str
    created_at: float
    action: Action
    note: str = ""
    persisted: bool = True
    restores: str | None = None
    seconds: float | None = None
    no_file: bool = False  # the model had no config.pbtxt then: Triton auto-completed its config from the model

    def label(self) -> str:
        """Return a one-line description for lists and diffs."""
        stamp = datetime.fromtimestamp(self.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        extra = f" of {self.restores}" if self.restores else ""
        return f"{self.id} {self.action.value}{extra} {stamp} {self.note}".rstrip()


@dataclass(frozen=True)
class HistoryProblem:
    """One stored version that was skipped: its id (or file name) and why; `path` is for operators only."""

    model: str
    name: str
    message: str
    path: Path

    def __str__(self) -> str:
        return f"{self.model}: {self.name}: {self.message}"


_FIELDS = {f.name for f in fields(Version)}


def unified_diff(old: str, new: str, old_label: str = "serving", new_label: str = "new") -> str:
    """Return a unified diff of two config texts ('' when equal)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label)
    return "".join(lines)


def history_root(key: str) -> Path:
    """Return state_dir()/history/<key>, where key names one repository or remote server."""
    return state_dir() / "history" / re.sub(r"[^A-Za-z0-9_.-]", "_", key)


def repository_key(repo: Path) -> str:
    """Return a folder name unique to one repository path: its name and a short hash."""
    resolved = str(Path(repo).resolve())
    return f"{Path(resolved).name}-{hashlib.sha256(resolved.encode()).hexdigest()[:10]}"


class ConfigHistory:
    """Versions of each model's config under root/<model>/, oldest first."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.clock = clock

    def folder(self, model: str) -> Path:
        """Return the folder of one model's versions."""
        if not model or "/" in model or "\\" in model or model in (".", ".."):
            raise HistoryError(f"model name {model!r} cannot name a history folder; use the model's folder name")
        return self.root / model

    def record(self, model: str, text: str, action: Action, **note) -> Version:
        """Store text as the newest version of model (one file, renamed into place); note holds Version's fields."""
        folder = self.folder(model)
        now = self.clock()
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        numbers = [int(m.group(1)) for m in map(_ID.match, self._stems(model)) if m]
        version = Version(f"{max(numbers, default=0) + 1:05d}-{stamp}", model, now, Action(action), **note)
        body = json.dumps({**asdict(version), "text": text}, indent=1) + "\n"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(folder / f"{version.id}.json", body)
            _sync_folder(folder)
        except OSError as exc:
            raise HistoryError(f"the config history of {model!r} could not be written ({clean(str(exc))}): free "
                               "the disk or fix the permissions of the state folder (TBL_STATE_DIR)") from exc
        return version

    def versions(self, model: str) -> list[Version]:
        """Return every complete, readable version of model, oldest first (see problems() for the rest)."""
        return [version for version, _ in self._scan(model)[0]]

    def problems(self, model: str) -> list[HistoryProblem]:
        """Return the stored versions of model that were skipped (incomplete or unreadable), oldest first."""
        return self._scan(model)[1]

    def get(self, model: str, version_id: str) -> Version:
        """Return one version, or raise HistoryError naming the ones there are."""
        return self._find(model, version_id)[0]

    def text(self, model: str, version_id: str) -> str:
        """Return the config text of one version."""
        return self._find(model, version_id)[1]

    def stack(self, model: str) -> list[Version]:
        """Return the versions still in effect: an undo drops the version it undid."""
        stack: list[Version] = []
        for version in self.versions(model):
            if version.action is Action.UNDO:
                if stack:
                    stack.pop()
            else:
                stack.append(version)
        return stack

    def undo_target(self, model: str) -> Version:
        """Return the version an undo brings back, or raise HistoryError when there is none."""
        stack = self.stack(model)
        if len(stack) < 2:
            raise HistoryError(f"nothing to undo for {model!r}: no earlier config was applied through the app")
        return stack[-2]

    def diff(self, model: str, old_id: str, new_id: str) -> str:
        """Return the unified diff between two versions."""
        return unified_diff(self.text(model, old_id), self.text(model, new_id), old_id, new_id)

    def _find(self, model: str, version_id: str) -> tuple[Version, str]:
        stems = self._stems(model)
        if version_id not in stems:  # only names listed in the folder are opened: no path comes from the caller
            ids = ", ".join(v.id for v in self.versions(model)[-5:]) or "none yet"
            raise HistoryError(f"{model!r} has no config version {version_id!r}; recent versions: {ids}")
        try:
            return _read(self.folder(model), version_id, model)
        except _Skipped as why:
            raise HistoryError(f"config version {version_id!r} of {model!r} cannot be read: {why}") from None

    def _stems(self, model: str) -> list[str]:
        """Return the names of every version file in the folder (complete or not), without suffix."""
        folder = self.folder(model)
        try:
            if not folder.is_dir():
                return []
            return sorted({p.stem for p in folder.iterdir() if p.suffix in (".json", ".pbtxt")}, key=_order)
        except OSError as exc:
            raise HistoryError(f"the config history of {model!r} cannot be listed ({clean(str(exc))}): fix the "
                               "permissions of the state folder") from exc

    def _scan(self, model: str) -> tuple[list[tuple[Version, str]], list[HistoryProblem]]:
        """Read every version: the complete ones with their text, and a problem for each one skipped."""
        folder = self.folder(model)
        complete: list[tuple[Version, str]] = []
        problems: list[HistoryProblem] = []
        for stem in self._stems(model):
            try:
                complete.append(_read(folder, stem, model))
            except _Skipped as why:
                problems.append(HistoryProblem(model, stem, str(why), why.path))
        return complete, problems


class _Skipped(Exception):
    """A stored version that cannot be used; the message says why."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def _read(folder: Path, stem: str, model: str) -> tuple[Version, str]:
    """Read one version in the one-file layout, or the old two-file one; raise _Skipped when it cannot be used."""
    note, pbtxt = folder / f"{stem}.json", folder / f"{stem}.pbtxt"
    if not note.exists():
        raise _Skipped("incomplete: its config text was written but not its note (a write was interrupted); "
                       "skipped — it never served as a recorded version", pbtxt)
    try:
        data = json.loads(note.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        text = data.pop("text", None)
        if text is None:  # the old layout: the text is in the .pbtxt beside the note
            if not pbtxt.exists():
                raise _Skipped("incomplete: its note has no config text and no .pbtxt beside it; skipped", note)
            text = pbtxt.read_text(encoding="utf-8")
        if not isinstance(text, str):
            raise ValueError("its text is not a string")
        kept = {k: v for k, v in data.items() if k in _FIELDS}
        version = Version(**{**kept, "action": Action(kept.get("action")), "model": model})
        if version.id != stem or not isinstance(version.created_at, (int, float)):
            raise ValueError(f"its id {version.id!r} or time does not match the file")
    except _Skipped:
        raise
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise _Skipped(f"unreadable ({clean(str(exc))[:200]}); skipped", note) from exc
    return version, text


def _order(stem: str) -> tuple[int, str]:
    """Sort ids by their number first, so 100000 comes after 99999."""
    match = _ID.match(stem)
    return (int(match.group(1)) if match else -1, stem)


def _sync_folder(folder: Path) -> None:
    """Flush the folder entry of the renamed file, so a power loss after record() returns keeps the version."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # platforms that cannot open a folder: the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
