"""The process's one Lab: every session gets the same one, none is built twice, a replaced one is closed first.

Streamlit's caches are no owner for it: any browser session may clear them (the clear-cache message is not
restricted), and a cleared cache built a second Lab — a second server and load generator — beside the first.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from app.lab.root import Lab

Factory = Callable[[], Lab]


class LabOwner:
    """Hold at most one Lab; build it on first use under a lock, close it before forgetting it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held while a Lab is built or closed: no second one meanwhile
        self._lab: Lab | None = None

    def current(self) -> Lab | None:
        """Return the Lab if one is built, else None (builds nothing, never waits)."""
        return self._lab

    def get(self, factory: Factory = Lab.create) -> Lab:
        """Return the Lab, building it with factory on first use; a factory that raises leaves none (the next
        call tries again) and its error goes to the caller."""
        lab = self._lab
        if lab is not None:
            return lab
        with self._lock:
            if self._lab is None:
                self._lab = factory()
            return self._lab

    def close(self) -> None:
        """Close the Lab (study, traffic, poller, history keeper, its servers) and forget it; nothing when none.
        A close that raises keeps the Lab owned, so no second one starts while parts of it may still run."""
        with self._lock:
            self._close()

    def replace(self, factory: Factory = Lab.create) -> Lab:
        """Close the Lab there is, then build and own a new one with factory."""
        with self._lock:
            self._close()
            self._lab = factory()
            return self._lab

    def _close(self) -> None:
        lab = self._lab
        if lab is not None:
            lab.close()  # raises before the Lab is forgotten: it stays the one to close
            self._lab = None


_owner = LabOwner()


def current() -> Lab | None:
    """Return this process's Lab if it is built, else None."""
    return _owner.current()


def get(factory: Factory = Lab.create) -> Lab:
    """Return this process's one Lab, building it on first use (callers in other threads wait for it)."""
    return _owner.get(factory)


def close() -> None:
    """Close this process's Lab and forget it (the next get() builds a new one)."""
    _owner.close()


def replace(factory: Factory = Lab.create) -> Lab:
    """Close this process's Lab, then build the new one with factory."""
    return _owner.replace(factory)
