"""What every stored study shows the same way: the list to pick from, its status in the colour it deserves, each
study drawn in its own guard (an error in one never hides the others), and a Delete that works whatever its state."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

import streamlit as st

from app.store.database import CANCELLED, DONE, FAILED, INTERRUPTED, RUNNING, Study
from app.experiments.stored import unreadable
from app.lab.ports import LabPort
from app.ui.access import can_operate, guarded
from app.ui.text import literal
from app.lab.jobs import Job

log = logging.getLogger(__name__)

# Green only for a study that ran to its end; red for one that could not do what it was asked.
_BOXES = {DONE: st.success, RUNNING: st.info, CANCELLED: st.info, INTERRUPTED: st.warning, FAILED: st.error}


def when(t: float | None) -> str:
    """Return an epoch time as the lists show it ('—' when unknown)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "—"


def seconds_text(seconds: float | None) -> str:
    """Return a span in seconds, or minutes past two of them ('—' when unknown)."""
    if seconds is None:
        return "—"
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"


def status_box(what: str, status: str, note: str = "", took: str = "") -> None:
    """Show how a study ended (or that it runs) with its why: done green, cancelled or running blue, interrupted
    orange, failed (or a status no study should have) red. what: Markdown the lab wrote (literal() typed text)."""
    box = _BOXES.get(status, st.error)
    why = note.strip()
    if status and why.lower().startswith(status) and why[len(status):len(status) + 1] in (":", ";"):
        why = why[len(status) + 1:].strip()  # the note already says the status ("failed: …"): say it once
    text = f"{what}: **{literal(status or 'no status')}**" + (f" in {took}" if took else "")
    box(text + (f" — {literal(guarded(why))}" if why else ""))


def drawn_apart(what: str, body: Callable[[], None]) -> bool:
    """Draw body; an error inside it is shown as what could not be shown, never raised, so the rest of the page
    (other studies, other tabs, Delete) still draws. Return True when body drew without error."""
    try:
        body()
    except Exception as exc:  # noqa: BLE001 - one study's damage must not take the page down
        log.exception("%s could not be shown", what)
        st.error(f"{what} could not be shown: {literal(guarded(f'{type(exc).__name__}: {exc}'))}. The rest of the "
                 "page is unaffected; Delete removes it.")
        return False
    return True


def safe_data(build: Callable[[], str], what: str) -> Callable[[], str]:
    """Return a download's deferred data builder that gives a note saying why, instead of an error, when the
    stored study cannot be made into it."""
    def data() -> str:
        try:
            return build()
        except Exception as exc:  # noqa: BLE001 - a damaged study still downloads something that says why
            log.exception("%s could not be built", what)
            return f"{what} could not be built from the stored study: {type(exc).__name__}: {exc}\n"
    return data


def readable_runs(lab: LabPort, study_id: int) -> list:
    """Return a study's stored runs that read whole (a CSV of its windows leaves the others out)."""
    return [e for e in lab.runs(study_id=study_id) if not e.broken]


def pick_study(lab: LabPort, kind: str, name: str) -> Study | None:
    """Select box of the stored studies of a kind, newest first (one that cannot be read whole says so); None when
    there are none — said as "starting" while the job is about to store one."""
    studies = lab.studies(kind=kind)
    if not studies:
        state = lab.job()
        starting = lab.job_running() and state is not None and state.kind == kind
        st.info(f"The {name.lower()} is starting." if starting else f"No {name.lower()}s yet.")
        return None
    damaged = {s.id for s in studies if unreadable(s)}
    # No status in the names: Chromium kept showing the name a study had when first drawn ("running" after it ended,
    # seen in scripts/walk_pages.py); how it ended is the box under the picker
    names = {s.id: f"{s.id}: {s.label}, {when(s.created_at)}"
             + (" — cannot be read whole" if s.id in damaged else "") for s in studies}
    sid = st.selectbox(name, list(names), format_func=names.get, key=f"exp:{kind}_pick")
    broken = [str(i) for i in sorted(damaged, reverse=True)]
    if broken:
        st.caption(f"Stored {name.lower()}s that cannot be read whole: {', '.join(broken)} — select one to see what "
                   "is wrong and delete it.")
    return next(s for s in studies if s.id == sid)


def resume_button(lab: LabPort, study: Study, text: str, resume: Callable[[LabPort, int], Job]) -> None:
    """Offer Resume for a study that stopped before it finished (resume: the study's resumed job)."""
    if study.status in (DONE, RUNNING) or not can_operate():
        return
    if st.button(f"Resume ({text})", key=f"exp:resume_{study.kind}", disabled=lab.job_running()):
        lab.start_job(resume(lab, study.id))
        st.rerun()


def problems_box(what: str, problems) -> None:
    """Say which parts of a stored study cannot be read (they are left out of what is shown)."""
    if problems:
        st.warning(f"Parts of this {what} cannot be read and are left out: "
                   + "; ".join(literal(guarded(p)) for p in problems))


def delete_button(lab: LabPort, study_id: int, what: str, key: str) -> None:
    """Offer Delete for a study (it and its runs), drawn apart from the study so it is there whatever went wrong;
    only the study a job runs now (or any, while a job has not yet said which) cannot be deleted."""
    job = lab.job()
    busy = lab.job_running() and job is not None and job.study_id in (None, study_id)
    if can_operate() and st.button(f"Delete this {what}", key=key, disabled=busy):
        lab.delete_study(study_id)
        st.rerun()


def study_results(lab: LabPort, kind: str, title: str, noun: str, delete_key: str, draw) -> None:
    """Pick a stored study of a kind and draw it apart (draw(lab, study)), so a damaged one shows what is wrong;
    its Delete button always follows."""
    study = pick_study(lab, kind, title)
    if study is None:
        return
    with st.container():
        drawn_apart(f"{title} {study.id}", lambda: draw(lab, study))
    delete_button(lab, study.id, noun, delete_key)


def cannot_read(title: str, study_id: int, broken: str, parts: str) -> bool:
    """Say that a stored study cannot be read and how to get rid of it; return True when it cannot (broken)."""
    if broken:
        st.error(f"{title} {study_id} cannot be read: {literal(guarded(broken))}. Delete it below (its {parts} go "
                 "with it).")
    return bool(broken)


def show_chart(chart) -> None:
    """Draw a study's Altair chart at the page's width, unvalidated: validating against the Vega-Lite schema took
    three quarters of a chart's time here (38 of 48 ms); tests/unit/experiments/report/test_study_charts.py
    validates every chart kind instead."""
    st.vega_lite_chart(chart.to_dict(validate=False), width="stretch")
