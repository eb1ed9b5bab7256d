"""The Timeline port: the change markers every chart draws.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_markers)."""
from __future__ import annotations

from app.lab.ports import CHANGE_KINDS
from app.timeline.markers import Marker


class TimelineVerbs:
    """The change markers every chart draws."""

    def markers(self, model: str | None = None, since: float = 0.0) -> list[Marker]:
        """Return the markers of a model (and the whole server's) that end at or after since, oldest first."""
        return self._markers.list(model, since)

    def last_change(self, model: str, kinds: tuple[str, ...] = CHANGE_KINDS) -> Marker | None:
        """Return the newest change of those kinds to the model (or a restart)."""
        return self._markers.last_change(model, kinds)

    def reloading(self, model: str) -> bool:
        """Return True while a reload of the model (or a restart) is under way."""
        return self._markers.reloading(model)

    def mark(self, model: str, kind: str, text: str) -> Marker:
        """Record an instant marker now."""
        return self._markers.add(model, kind, text)

    def timeline_version(self) -> int:
        """Return a number that grows with every marker added or finished."""
        return self._markers.version
