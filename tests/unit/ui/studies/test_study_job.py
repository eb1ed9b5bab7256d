"""The Experiments page's study job (app/ui/studies/study_job.py) on the FakeLab: a sweep and an A/B started from their
forms run as the lab's one job, show their progress, cancel, store what they measured and serve the starting config
again; a cancelled sweep resumes; a finished job shows its status in its colour."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.config.read import settings_of
from app.lab.jobs import FunctionJob
from app.store.database import CANCELLED
from tests.unit.ui.apptest import button, ok, open_page, run_page, soon, texts, widget

PAGE = "lab_pages/experiments.py"
MODEL = "gpu_sim"


def delay(lab) -> int:
    return settings_of(lab.served_config(MODEL)).dynamic_batching.max_queue_delay_microseconds


def progress_text(at) -> str:
    bars = at.get("progress")
    assert bars, "no progress bar"
    return bars[0].proto.text


def cancel(at, lab) -> None:
    ok(at.button(key="exp:cancel").click().run())
    assert lab.wait_job(10), "the job did not end after Cancel"
    ok(at.run())


def test_a_sweep_starts_shows_its_progress_cancels_and_resumes(on_fake):
    before = delay(on_fake)
    at = open_page(PAGE)
    widget(at.multiselect, "Instance counts").set_value([1, 2])
    widget(at.multiselect, "max_queue_delay (µs)").set_value([0])
    widget(at.checkbox, "Also the config serving now (default)").uncheck()
    widget(at.text_input, "Load levels").set_value("1, 4")
    widget(at.number_input, "Re-measure the top candidates (0–10)").set_value(2)
    widget(at.text_input, "Sweep label").set_value("page sweep")
    ok(button(at, "Start sweep").click().run())
    assert any("Sweep started: 2 configurations × 2 loads" in t and "up to 2 candidates measured 1× more" in t
               for t in texts(at.success)), texts(at.success)
    assert not any("No sweeps yet" in t for t in texts(at.info)), texts(at.info)  # starting, or listed: never "none"
    assert on_fake.job_running() and on_fake.job().kind == "sweep"
    soon(lambda: on_fake.job().progress is not None, what="the sweep's progress")
    ok(at.run())
    assert progress_text(at).startswith("page sweep: 0 of ~") and "at concurrency 1" in progress_text(at)

    cancel(at, on_fake)
    study = on_fake.studies(kind="sweep")[0]
    assert study.status == CANCELLED and "the starting config serves again" in study.note, study
    assert delay(on_fake) == before
    assert any(f"Sweep {study.id}: **cancelled**" in i for i in texts(at.info)), texts(at.info)
    ok(at.button(key="exp:resume_sweep").click().run())  # Resume runs only the points not finished
    assert on_fake.job_running() and on_fake.job().kind == "sweep"
    soon(lambda: on_fake.job().progress is not None, what="the resumed sweep's progress")
    cancel(at, on_fake)
    assert on_fake.studies(kind="sweep")[0].id == study.id  # the same study, not a new one


def test_a_sweep_ranked_by_the_twin_is_started_with_its_top(on_fake):
    """The form's 'Let the twin rank' reaches the stored sweep's options, and the start says so."""
    at = open_page(PAGE)
    widget(at.multiselect, "Instance counts").set_value([1, 2])
    widget(at.multiselect, "max_queue_delay (µs)").set_value([0, 2000])
    widget(at.number_input, "Let the twin rank: measure only its top configurations (0: measure every one)"
           ).set_value(2)
    widget(at.number_input, "p99 headroom (% of the budget)").set_value(5)
    ok(button(at, "Start sweep").click().run())
    assert any("the twin ranks them and only its top 2 are measured" in t for t in texts(at.success)), \
        texts(at.success) + texts(at.error)
    soon(lambda: on_fake.studies(kind="sweep"), what="the sweep's study")
    definition = on_fake.studies(kind="sweep")[0].definition
    assert definition["options"]["twin_top"] == 2 and definition["space"]["p99_headroom"] == pytest.approx(0.05)
    on_fake.cancel_job()  # during the twin's probe
    assert on_fake.wait_job(10), "the job did not end after a cancel"


def test_an_ab_playing_a_trace_starts_shows_its_progress_and_cancels(on_fake):
    at = open_page(PAGE)
    at.number_input(key=f"exp:ab_knob1:{MODEL}:delay").set_value(5000).run()
    widget(at.radio, "Traffic").set_value("trace")
    widget(at.selectbox, "Trace (traffic: a rate trace)").set_value("flash_crowd")
    widget(at.number_input, "Trace compress (recorded s per played s)").set_value(900.0)
    widget(at.number_input, "Trials").set_value(2)
    ok(button(at, "Start comparison").click().run())
    started = [t for t in texts(at.success) if t.startswith("Comparison started")]
    assert started and "each playing flash_crowd once" in started[0], texts(at.success) + texts(at.error)
    assert on_fake.job_running() and on_fake.job().kind == "ab"
    soon(lambda: on_fake.job().progress is not None, what="the comparison's progress")
    ok(at.run())
    assert " of ~" in progress_text(at), progress_text(at)
    cancel(at, on_fake)
    assert on_fake.studies(kind="ab")[0].status == CANCELLED


COLOURS = {"failed": "error", "interrupted": "warning", "cancelled": "info", "done": "success"}


@pytest.mark.parametrize("status", COLOURS)
def test_a_finished_job_shows_its_status_in_its_colour(on_fake, status):
    """A failed sweep once showed in a green box: each ending has its colour, green only for done (a note that starts
    with its status, "failed: …" or "cancelled; …", says it once)."""
    note = f"{status}{';' if status == 'cancelled' else ':'} because the server refused it"
    result = SimpleNamespace(status=status, note=note, wall_s=5.0, study_id=None)
    on_fake.start_job(FunctionJob("sweep", f"{status} job", lambda progress, cancelled: result))
    assert on_fake.wait_job(10)
    at = run_page(PAGE)  # a failed job is an error box: the page shows it, nothing raised
    shown = {kind: [t for t in texts(getattr(at, kind)) if t.startswith(f"{status} job")] for kind in COLOURS.values()}
    assert shown[COLOURS[status]] == [f"{status} job: **{status}** in 5 s — because the server refused it"], shown
    assert sum(map(len, shown.values())) == 1, shown

