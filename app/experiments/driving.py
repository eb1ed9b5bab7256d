"""What sweeps and A/B comparisons share while they drive the live server.

They own the reloads they make (and notice anyone else's, or a restart, as an interruption), stop on
Cancel, and serve the starting config again at the end — after a restart has finished — then start the
operator's traffic again when it was running as they began.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config.errors import ConfigError
from app.config.model_config import copy_config, format_config, parse_config
from app.timeline.meter import MeasuredWindow, Meter, ServerGone
from app.store.database import CANCELLED, DONE, FAILED, INTERRUPTED
from app.lab.ports import StudyLab

log = logging.getLogger(__name__)


class Cancelled(Exception):
    """The person cancelled the study."""


class Interrupted(Exception):
    """Something outside the study changed the server under it (a restart, someone else's Apply)."""


class Failed(Exception):
    """The study cannot do what it was asked: none of its configurations can be applied, say."""


@dataclass(frozen=True)
class Start:
    """What served when a study began: the text to serve again at its end, and the base its knobs move."""

    text: str  # Study.base_config: the model's config.pbtxt, or the served config formatted when it had none
    served: str  # the served config formatted (Triton's defaults and auto-completion filled in)
    had_file: bool = True  # False: the model had no config.pbtxt, and has none again at the end

    @classmethod
    def now(cls, lab: StudyLab, model: str) -> Start:
        """Return what serves now."""
        return cls(lab.served_text(model), format_config(lab.served_config(model)),
                   lab.file_text(model) is not None)

    @classmethod
    def of(cls, study) -> Start:
        """Return the start a stored study recorded (studies from before it was recorded: their base text)."""
        saved = study.definition.get("start") or {}
        return cls(study.base_config, saved.get("served", study.base_config), bool(saved.get("had_file", True)))

    def to_dict(self) -> dict:
        """Return what a study's definition keeps beside base_config."""
        return {"served": self.served, "had_file": self.had_file}


def wait_ready(lab: StudyLab, timeout_s: float = 60.0) -> bool:
    """Wait until no restart is under way and the server is ready; return whether it is."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        restarting = any(m.kind == "restart" and m.end is None for m in lab.markers())
        if not restarting and lab.status().ready:
            return True
        time.sleep(0.25)
    return False


def restarted(lab: StudyLab, model: str, since: float) -> str:
    """Return 'the server restarted …' when a restart marker lies after since (epoch s), else ''."""
    change = lab.last_change(model, kinds=("restart",))
    return f"the server restarted ({change.text})" if change is not None and change.t >= since else ""


@dataclass
class Progress:
    """What the page shows while a study runs."""

    study_id: int
    done: int = 0
    total: int = 0
    eta_s: float | None = None
    current: str = ""
    narration: str = ""
    log: list[str] = field(default_factory=list)


class StudyDriver:
    """The part of a study's loop that touches the server's config and watches for disturbances."""

    what = "study"  # named in messages: sweep, comparison
    kept = "results"  # what survives a stop: points, trials

    def __init__(self, lab: StudyLab, model: str, study_id: int, cancel: threading.Event,
                 progress=None) -> None:
        self.lab, self.model, self.study_id, self.cancel = lab, model, study_id, cancel
        self.progress_fn = progress  # called with the progress state after every step
        self.t_start, self.started_at = time.monotonic(), time.time()
        self.own_change: int | None = None  # the marker id of our last reload
        self.changed = False
        # the operator's traffic as the study began: it takes the traffic over, and gives it back at the end
        self.found = lab.traffic().spec if lab.traffic().running else None

    def publish(self, state, finished_here: int, final: bool = False) -> None:
        """Set the ETA from the time per item finished in this session and hand the state to the page."""
        if finished_here and not final:
            state.eta_s = (time.monotonic() - self.t_start) / finished_here * max(0, state.total - state.done)
        else:
            state.eta_s = 0.0 if final else None
        if final:
            state.current = ""
        if self.progress_fn is not None:
            self.progress_fn(state)

    def serve(self, config, text: str, whole: str | None = None) -> None:
        """Make config serve (a hot reload unless it already does); ServerGone when the server died meanwhile,
        ConfigError when it was refused or rolled back.

        config: the served config with knobs moved (only those fields are edited in the user's config.pbtxt);
        whole: instead, a whole config text to write as given (an A/B arm), config being its parse.
        """
        wanted = copy_config(config)
        wanted.name = self.model  # a config pasted without a name is the same config
        if self._serving(wanted):
            return
        try:
            self.reload(wanted, text, whole)
        except ConfigError as exc:
            if not self.lab.status().up:
                raise ServerGone(f"the server stopped answering during '{text}'") from exc
            raise

    def _serving(self, wanted) -> bool:
        """Return True when wanted is what the model's text says or what the server serves."""
        if parse_config(self.lab.served_text(self.model)) == wanted:
            return True
        try:
            return self.lab.served_config(self.model) == wanted
        except ConfigError:
            return False

    def reload(self, config, text: str, whole: str | None = None) -> None:
        """Hot-reload config (or the whole text) through the lab (validated, verified, marked) as this study's own
        change; a change refused or rolled back is ours too (its marker is no one else's)."""
        try:
            if whole is None:
                self.lab.apply(self.model, config, text, confirm_contract=True)
            else:
                self.lab.apply_text(self.model, whole, text, confirm_contract=True)
            self.changed = True
        finally:
            change = self.lab.last_change(self.model)
            self.own_change = change.id if change else None

    def start_traffic(self, spec) -> float:
        """Start the lab's traffic with spec; return when it began sending (epoch s)."""
        self.lab.start_traffic(spec)
        deadline = time.time() + 10
        while self.lab.traffic().started_at is None and self.lab.traffic().running and time.time() < deadline:
            time.sleep(0.02)
        t0 = self.lab.traffic().started_at
        if t0 is None:
            raise ServerGone(f"the load generator could not start: {self.lab.traffic_snapshot(0).error}")
        return t0

    def run_fixed(self, meter: Meter, spec, warmup_s: float, seconds: float, what: str) -> list[MeasuredWindow]:
        """Run spec from its start: drop warmup_s, measure `seconds` in one-second windows, stop the traffic."""
        t0 = self.start_traffic(spec)
        meter.wait_until(t0 + warmup_s, self.cancel)
        windows = self.measure(meter, seconds)
        self.lab.stop_traffic(f"traffic stop: {what} measured")
        return windows

    def measure(self, meter: Meter, seconds: float, lab_traffic: bool = True) -> list[MeasuredWindow]:
        """Measure `seconds` from now in one-second windows with exact edges (records before the first edge are
        dropped); lab_traffic: the lab's traffic must keep running meanwhile."""
        edge = meter.edge()
        meter.discard_before(edge.t)
        windows, end = [], edge.t + seconds
        while edge.t < end - 0.05:
            window, edge = self.next_window(meter, edge, min(edge.t + 1.0, end), lab_traffic)
            windows.append(window)
        return windows

    def wait_idle(self, meter: Meter, limit_s: float = 30.0) -> float:
        """Wait (at most limit_s) until the server has nothing pending — a backlog an earlier overload left
        behind would otherwise be charged to what runs next; return how long it waited."""
        started = time.time()
        while time.time() < started + limit_s:
            edge = meter.edge()
            if not edge.values.pending:
                break
            meter.wait_until(edge.t + 0.25, self.cancel)
            if self.cancel.is_set():
                raise Cancelled
        return time.time() - started

    def next_window(self, meter: Meter, edge, until: float, lab_traffic: bool = True) -> tuple[MeasuredWindow, object]:
        """Return the window from edge to a new edge at clock time until, and that edge; stop on Cancel or a
        disturbance."""
        meter.wait_until(until, self.cancel)
        if self.cancel.is_set():
            raise Cancelled
        nxt = meter.edge()
        window = meter.window(edge, nxt)
        self.check_undisturbed(lab_traffic)
        return window, nxt

    def check_undisturbed(self, lab_traffic: bool = True) -> None:
        """Raise Interrupted when someone else changed the config, the server restarted or (lab_traffic) the
        lab's traffic stopped."""
        change = self.lab.last_change(self.model)
        if change is not None and change.id != self.own_change and change.t > self.started_at:
            what = "the server restarted" if change.kind == "restart" else f"the config changed ({change.text})"
            raise Interrupted(f"{what} during the {self.what}")
        if lab_traffic and not self.lab.traffic().running:
            raise Interrupted(f"the {self.what}'s traffic was stopped")

    def conclude(self, body: Callable[[], None], base_text: str, had_file: bool = True) -> tuple[str, str]:
        """Run the study's loop; return (status, note) — done, cancelled, interrupted or failed, finished work
        kept — after stopping the traffic and serving the starting config again. Unexpected errors mark the
        study failed (with the error) and propagate."""
        status, note = DONE, ""
        try:
            body()
        except Cancelled:
            status, note = CANCELLED, f"cancelled; finished {self.kept} are kept and Resume runs only the rest"
        except (ServerGone, Interrupted) as exc:
            why = restarted(self.lab, self.model, self.started_at) or exc
            status, note = INTERRUPTED, f"interrupted: {why}; finished {self.kept} are kept"
        except Failed as exc:
            status, note = FAILED, f"failed: {exc}"
        except Exception as exc:
            self.lab.update_study(self.study_id, status=FAILED,
                                              note=f"failed: {type(exc).__name__}: {exc}")
            self.finish(base_text, had_file)
            raise
        restored = self.finish(base_text, had_file)
        return status, f"{note}; {restored}" if note and restored else note or restored

    def finish(self, base_text: str, had_file: bool = True) -> str:
        """Stop the traffic, serve the starting config again — the user's text as it was, or no config.pbtxt
        when the model had none (had_file False) — and start the traffic found running at the start again with
        its spec; return what was done about it."""
        wait_ready(self.lab)
        try:
            self.lab.stop_traffic(f"traffic stop: {self.what} ended")
        except Exception:  # noqa: BLE001 - the result is stored either way
            log.exception("stopping the %s's traffic failed", self.what)
        done = [self._restore(base_text, had_file), self._resume()]
        return "; ".join(d for d in done if d)

    def _resume(self) -> str:
        """Start the traffic that ran when the study began again (its spec, current rate included); say so."""
        if self.found is None:
            return ""
        try:
            self.lab.start_traffic(self.found)
        except Exception as exc:  # noqa: BLE001 - say so; the person can start it from the traffic panel
            log.exception("restarting the traffic after the %s failed", self.what)
            return f"the traffic that ran before the {self.what} could not start again ({exc})"
        return f"the traffic that ran before the {self.what} runs again"

    def _restore(self, base_text: str, had_file: bool) -> str:
        """Serve the starting config again when the study changed it; return what was done."""
        if not self.changed:
            return ""
        what = f"{self.what} ended: back to the starting config"
        try:
            if not had_file and self.lab.file_text(self.model) is not None:
                self._remove_file(what)
                return "the starting config serves again (config.pbtxt removed: the model had none)"
            if self.lab.served_text(self.model) != base_text:  # the user's own text comes back as it was
                self.lab.apply_text(self.model, base_text, what, confirm_contract=True)
                return "the starting config serves again"
        except Exception as exc:  # noqa: BLE001 - say so; the person can apply it from the history
            return f"could not serve the starting config again ({exc}); it is in the config history"
        return ""

    def _remove_file(self, what: str) -> None:
        """Serve the model's last version without config.pbtxt again (the file goes, Triton auto-completes)."""
        version = next((v for v in reversed(self.lab.versions(self.model)) if v.no_file), None)
        if version is None:
            raise ConfigError(f"the config history of {self.model!r} has no version without config.pbtxt")
        self.lab.rollback(self.model, version.id, what)
