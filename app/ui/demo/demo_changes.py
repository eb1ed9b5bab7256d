"""A change marker said for an audience: what the change does, built from the settings it moved, not its text.

A config change's marker carries the operator's short text ("max_queue_delay_us 500→5000") and the diff;
the config history holds both versions. The version recorded inside the marker's band is the one it made
serve, the one before it what served before: their settings, compared, give the sentence ("the batcher may
now wait up to 5 ms to fill a batch"), and the fields they moved go to the hover. A marker is said once and
kept (a finished marker never changes).
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from app.config.model_config import parse_config
from app.config.read import settings_of
from app.lab.ports import Plans
from app.timeline.markers import Marker
from app.ui.demo.demo_words import Said, change_said

log = logging.getLogger(__name__)

SLACK_S = 1.0  # a version recorded this close to its band's edges belongs to it (clock reads differ)
KEEP = 256

_said: OrderedDict[tuple, Said] = OrderedDict()
_lock = threading.Lock()


def marker_said(lab: Plans, marker: Marker) -> Said:
    """Return what a marker means in a sentence (a person's own words, e.g. a note, come back as typed: the page
    escapes every sentence it shows)."""
    key = (id(lab), marker.id, marker.end, marker.ok)
    with _lock:
        if key in _said:
            return _said[key]
    said = _say(lab, marker)
    if marker.end is not None or not marker.band:  # a band under way is said again once it ends
        with _lock:
            _said[key] = said
            while len(_said) > KEEP:
                _said.popitem(last=False)
    return said


def _say(lab: Plans, marker: Marker) -> Said:
    text = marker.text
    if marker.kind == "restart":
        if marker.band and marker.end is None:
            return Said("The server is restarting…", text)
        return Said("The server restarted." if marker.ok else "The server could not restart.", text)
    if marker.kind == "traffic":
        return Said(_traffic(text), text)
    if marker.kind in ("apply", "undo"):
        if marker.band and marker.end is None:
            return Said("The server is switching to a new configuration…", text)
        if not marker.ok:
            return Said("A configuration change was refused: the previous configuration still serves.", text)
        said = _change(lab, marker)
        if said is None:
            return Said(f"The configuration of {marker.model} changed.", text)
        back = "back to the starting config" in text or marker.kind == "undo"
        lead = "Back to the earlier configuration: " if back else ""
        return Said(lead + (said.text[0].lower() + said.text[1:] if lead else said.text),
                    f"{said.hover} ({text})")
    return Said(text)  # a note someone wrote: as typed


def _traffic(text: str) -> str:
    if text.startswith("traffic start"):
        return "Traffic started."
    if text.startswith("traffic stop"):
        return "Traffic stopped."
    if "rebuilt" in text:
        return "The traffic was rebuilt to match what the model now accepts."
    if "not restarted" in text:
        return "The traffic could not be restarted for the model's new inputs."
    return "The traffic changed."


def _change(lab: Plans, marker: Marker) -> Said | None:
    """Return the sentence of the settings a config marker moved, from the config history (None when the two
    versions cannot be found or read)."""
    try:
        versions = lab.versions(marker.model)
        end = marker.end if marker.end is not None else marker.t
        inside = [i for i, v in enumerate(versions) if marker.t - SLACK_S <= v.created_at <= end + SLACK_S]
        if not inside or inside[-1] == 0:
            return None
        new, old = versions[inside[-1]], versions[inside[-1] - 1]
        before = settings_of(parse_config(lab.version_text(marker.model, old.id)))
        after = settings_of(parse_config(lab.version_text(marker.model, new.id)))
    except Exception:  # noqa: BLE001 - a history that cannot be read: the change is said without its detail
        log.debug("the settings of marker %s could not be read", marker.id, exc_info=True)
        return None
    return change_said(before, after)
