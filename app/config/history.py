"""Keep every config version a model served: timestamped pbtxt files with a JSON note beside each."""
from __future__ import annotations

import difflib
import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from app.config.errors import HistoryError
from app.config.model_config import write_text_atomic
from app.paths import state_dir


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
        """Store text as the newest version of model; note holds Version's optional fields."""
        folder = self.folder(model)
        folder.mkdir(parents=True, exist_ok=True)
        now = self.clock()
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        version = Version(f"{len(self._ids(model)) + 1:05d}-{stamp}", model, now, Action(action), **note)
        write_text_atomic(folder / f"{version.id}.pbtxt", text)
        write_text_atomic(folder / f"{version.id}.json", json.dumps(asdict(version), indent=1) + "\n")
        return version

    def versions(self, model: str) -> list[Version]:
        """Return every recorded version of model, oldest first."""
        folder = self.folder(model)
        return [self._load(folder / f"{vid}.json") for vid in self._ids(model)]

    def get(self, model: str, version_id: str) -> Version:
        """Return one version, or raise HistoryError naming the ones there are."""
        if version_id not in self._ids(model):
            ids = ", ".join(self._ids(model)[-5:]) or "none yet"
            raise HistoryError(f"{model!r} has no config version {version_id!r}; recent versions: {ids}")
        return self._load(self.folder(model) / f"{version_id}.json")

    def text(self, model: str, version_id: str) -> str:
        """Return the config text of one version."""
        self.get(model, version_id)
        return (self.folder(model) / f"{version_id}.pbtxt").read_text()

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

    def _ids(self, model: str) -> list[str]:
        folder = self.folder(model)
        return sorted(p.stem for p in folder.glob("*.pbtxt")) if folder.is_dir() else []

    @staticmethod
    def _load(path: Path) -> Version:
        data = json.loads(path.read_text())
        data["action"] = Action(data["action"])
        return Version(**data)
