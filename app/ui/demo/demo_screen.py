"""Everything one /demo screen says, built before any of it is drawn and shared by every viewer in the same tick.

Drawing element by element while still computing (the served config is read over HTTP) left a screen half old,
half new for a moment: a sentence of this second beside tiles of the last. A Screen is complete before the
page draws it, so the story, the sentences, the tiles and the chart always come from one frame. No Streamlit.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from app.config.read import settings_of
from app.diagnosis.diagnose import diagnose_figures
from app.lab.ports import LabPort
from app.timeline.markers import Marker
from app.ui.demo import presenter
from app.ui.demo.demo_changes import marker_said
from app.ui.demo.demo_story import Story
from app.ui.demo.demo_words import Said, Tile, detail_tiles, state_sentence, tiles, traffic_words, window_words
from app.ui.live.live_frame import LiveFrame, cache_of, frame, state_key

log = logging.getLogger(__name__)

CHART_S = 180  # the charts' window; the tiles and the sentences use the frame's tile window (last 10 s)
CHANGES_SHOWN = 5


@dataclass(frozen=True)
class Screen:
    """One /demo screen: the story (or none), the live frame, and every sentence and tile drawn from it."""

    story: Story | None
    report_id: int | None
    model: str
    frame: LiveFrame
    now: Said | None
    latest: tuple[Marker, Said] | None
    tiles: list[Tile]
    details: list[Tile]
    window: str
    traffic: str  # the load in words ('' when none ever ran)
    traffic_running: bool
    traffic_since: float | None
    changes: list[tuple[Marker, Said]]


def screen(lab: LabPort, now: float | None = None) -> Screen:
    """Return the screen of now (shared per tick by every viewer showing the same choice)."""
    now = time.time() if now is None else now
    choice = presenter.current()
    key = ("demo-screen", choice, *state_key(lab), lab.job_running(), getattr(lab.job(), "progress", None) is not None)
    return cache_of(lab).get(key, now, lambda: _build(lab, choice, now))


def _build(lab: LabPort, choice, now: float) -> Screen:
    shown = presenter.what_to_show(lab, choice, now)
    story = shown.story
    model = _model(lab, story)
    f = frame(lab, model, CHART_S, per_class=False, audience=True, now=now)
    said = None
    if (f.tile.server.infer_count or 0) >= 10 or f.tile.samples() >= 10:  # a smoke request is not traffic
        try:
            said = state_sentence(diagnose_figures(f.tile, settings_of(lab.served_config(model))))
        except Exception:  # noqa: BLE001 - the sentence is a caption, never a broken screen
            log.debug("no state sentence for %s", model, exc_info=True)
    if said is None and not f.running and story is None:
        said = Said("no traffic is running.")
    changes = [m for m in f.markers if m.kind != "traffic"] or f.markers
    latest = (changes[-1], marker_said(lab, changes[-1])) if changes and story is None else None
    snap = lab.traffic_snapshot(window_s=0)
    return Screen(story, shown.report_id, model, f, said, latest, tiles(f.tile), detail_tiles(f.tile),
                  window_words(f.tile), traffic_words(snap.spec) if snap.spec is not None else "", snap.running,
                  snap.started_at, [(m, marker_said(lab, m)) for m in f.markers[-CHANGES_SHOWN:][::-1]])


def _model(lab: LabPort, story: Story | None) -> str:
    """Return the model /demo follows: the story's, else the traffic's, else the first the server serves."""
    if story is not None and story.model:
        return story.model
    spec = lab.traffic().spec
    if spec is not None:
        return spec.model
    ready = sorted(m.name for m in lab.status().models if m.state == "READY")
    return ready[0] if ready else "gpu_sim"
