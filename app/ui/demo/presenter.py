"""What /demo shows, chosen by the presenter from the operator's pages: the lab (and its running study, then that
study's verdict), the live lab only, a stored verdict, or a stored report.

The choice is the process's, like the demo viewers (app.ui.demo.viewers): every operator session sets the same one
and every /demo viewer follows it. It lives in this module, not in a st.cache_* store any session can clear.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from app.lab.ports import LabPort, Store
from app.ui.access import can_operate
from app.ui.demo.demo_story import Story, finished_studies, job_story, study_story
from app.ui.text import literal
from app.ui.demo.viewers import viewers

AUTO, LIVE, STUDY, REPORT = "auto", "live", "study", "report"
VERDICT_KEEP_S = 600.0  # following the lab, a finished study's verdict stays up this long (or until a config change)
CHANGE_KINDS = ("apply", "undo", "restart")


@dataclass(frozen=True)
class OnScreen:
    """What the presenter put on /demo, and when."""

    kind: str = AUTO
    study_id: int | None = None
    at: float = 0.0


class PresenterChoice:
    """The one choice of the process, thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._choice = OnScreen()

    def get(self) -> OnScreen:
        """Return the current choice."""
        with self._lock:
            return self._choice

    def set(self, kind: str, study_id: int | None = None) -> OnScreen:
        """Make /demo show kind (a stored study's verdict or report needs its study_id); ValueError otherwise."""
        if kind not in (AUTO, LIVE, STUDY, REPORT):
            raise ValueError(f"kind must be one of {AUTO}, {LIVE}, {STUDY}, {REPORT}; got {kind!r}")
        if kind in (STUDY, REPORT) and study_id is None:
            raise ValueError(f"showing a stored {kind} needs the study's id (study_id)")
        with self._lock:
            self._choice = OnScreen(kind, study_id if kind in (STUDY, REPORT) else None, self._clock())
            return self._choice


_CHOICE = PresenterChoice()


def current() -> OnScreen:
    """Return what /demo is to show now."""
    return _CHOICE.get()


def choose(kind: str, study_id: int | None = None) -> OnScreen:
    """Set what /demo shows, for every viewer of this process."""
    return _CHOICE.set(kind, study_id)


@dataclass(frozen=True)
class Shown:
    """What /demo draws above the live lab: a story (or none), and whether a study's report goes with it."""

    story: Story | None
    report_id: int | None = None


def what_to_show(lab: LabPort, choice: OnScreen, now: float | None = None) -> Shown:
    """Return what /demo shows for a choice: following the lab, the running study, then its verdict for
    VERDICT_KEEP_S or until the next config change; a stored study when one is chosen (gone: the lab)."""
    now = time.time() if now is None else now
    if choice.kind == LIVE:
        return Shown(None)
    if choice.kind in (STUDY, REPORT):
        try:
            study = lab.study(choice.study_id)
        except Exception:  # noqa: BLE001 - deleted meanwhile: back to the lab
            return Shown(None)
        return Shown(study_story(lab, study), choice.study_id if choice.kind == REPORT else None)
    if lab.job_running():
        return Shown(job_story(lab))
    state = lab.job()
    if state is None or state.finished is None or now - state.finished > VERDICT_KEEP_S:
        return Shown(None)
    later = [m for m in lab.markers(None, state.finished + 2.0) if m.kind in CHANGE_KINDS
             and m.t > state.finished + 2.0]  # a study's own last change lands before it finishes
    return Shown(None if later else job_story(lab))


# --- the operator's panel ------------------------------------------------------------------------------------------
_KIND_WORDS = {"scenario": "scenario", "sweep": "sweep", "ab": "A/B"}


def presenter_panel(lab: Store) -> None:
    """A small panel for the operator (a sidebar or the Overview): choose what /demo shows; nothing for viewers."""
    if not can_operate():
        return
    studies = finished_studies(lab)
    options: list[tuple[str, int | None]] = [(AUTO, None), (LIVE, None)]
    options += [(STUDY, s.id) for s in studies] + [(REPORT, s.id) for s in studies if s.reportable]
    names = {s.id: f"{_KIND_WORDS.get(s.kind, s.kind)} {s.id}: {s.label}" for s in studies}
    chosen = current()
    now = (chosen.kind, chosen.study_id)
    if now not in options:  # a stored study that is no longer listed (deleted, or older than the list)
        options.append(now)

    def shown(i: int) -> str:
        kind, sid = options[i]
        if kind == AUTO:
            return "The lab, with the running study and its verdict"
        if kind == LIVE:
            return "The live lab only"
        what = names.get(sid, f"study {sid}")
        return f"Verdict of {what}" if kind == STUDY else f"Report of {what}"

    picked = st.selectbox("What /demo shows", range(len(options)), index=options.index(now), format_func=shown,
                          help="Every /demo viewer follows this choice (it is this dashboard's, not this tab's).")
    if options[picked] != now:
        choose(*options[picked])
        st.rerun()
    watching = viewers()
    st.caption(f"{watching} viewer{'s' if watching != 1 else ''} on /demo now." if watching else
               "Open /demo on the projector: it follows this choice.")


def label_of(choice: OnScreen) -> str:
    """Return the choice in words for a caption (typed labels escaped)."""
    if choice.kind in (AUTO, LIVE):
        return "the live lab" if choice.kind == LIVE else "the lab and its studies"
    return literal(f"{choice.kind} {choice.study_id}")
