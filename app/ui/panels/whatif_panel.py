"""What if: the twin's prediction for the knobs as set, beside the live figures and what serves now — before Apply —
and, after Apply, what it predicted beside what was measured (app/twin/checks.py)."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from app.config.settings import ModelSettings
from app.lab.ports import LabPort
from app.metrics.catalog import fmt, label
from app.twin.batcher import Unsupported, batcher_of
from app.twin.calibration import MODEL_LATENCY_SPREAD
from app.twin.checks import SHOWN
from app.twin.predict import Interval, Prediction
from app.ui.access import can_operate
from loadgen.stats import ALL

LIVE_S = 20.0  # the live column's window, as the diagnosis's
FRESH_S = 300.0  # a change this recent opens its predicted-against-measured table by itself
KEYS = {"throughput_rps": "throughput_rps", "p50_ms": "p50_ms", "p99_ms": "p99_ms", "mean_batch": "avg_batch"}


def whatif_panel(lab: LabPort, model: str, served: ModelSettings, proposed: ModelSettings | None,
                 key: str) -> Prediction | None:
    """Show what the twin expects of the knobs as set (and of what serves) under the traffic running, beside the
    live figures; return the prediction for the proposed knobs (None: nothing proposed, the panel is closed, or the
    twin cannot say).

    The twin runs only while the panel is open — it opens by itself when a knob moves: each prediction is a few
    simulated runs (0.1-0.5 s of CPU) that would otherwise take CPU from the server under test at every redraw, on a
    machine that may have two cores. Closed, it still has the changes' predictions measured and stored."""
    box = st.expander("What if — the twin's prediction for these knobs", expanded=proposed is not None,
                      key=whatif_key(key, proposed is not None), on_change="rerun")
    shown = None
    if box.open:
        with box:
            shown = _panel(lab, model, served, proposed, key)
    _checks(lab, model)  # measured once the change has shown, open or not; shown outside it, where Apply leaves you
    return shown


def whatif_key(key: str, proposed: bool) -> str:
    """Return the panel's widget key on a page (key): one for the knobs as served, one for knobs moved, so that a
    moved knob opens it."""
    return f"{key}:whatif:{'proposed' if proposed else 'served'}"


def predicted_at_apply(lab: LabPort, model: str, settings: ModelSettings,
                       shown: Prediction | None) -> Prediction | None:
    """Return the prediction to keep with an Apply of settings: the one shown, else (the panel closed) the twin's now,
    before the change; None when the twin cannot say."""
    if shown is not None:
        return shown
    try:
        load = lab.twin_load(model)
        return lab.predict(model, settings, load) if load is not None else None
    except ValueError:
        return None


def _panel(lab: LabPort, model: str, served: ModelSettings, proposed: ModelSettings | None,
           key: str) -> Prediction | None:
    try:  # a config the twin does not model: said before any traffic is asked for (sequence batching)
        batcher_of(proposed or served)
    except Unsupported as exc:
        st.caption(f"No prediction: {exc}. Apply measures it: the Live figures below show what the change does.")
        return None
    try:
        load = lab.twin_load(model)
    except ValueError as exc:  # traffic the twin does not model (sequences)
        st.caption(f"No prediction: {exc}.")
        return None
    if load is None:
        st.caption(f"The twin predicts for the traffic the lab sends: start traffic to `{model}` and it shows what "
                   "these knobs would do to it, before you apply them.")
        return None
    try:
        now = lab.predict(model, served, load)
        then = lab.predict(model, proposed, load) if proposed is not None else None
    except ValueError as exc:  # no execution seen yet, or a scheduler or load the twin does not model
        st.caption(f"No prediction: {exc}.")
        _probe_button(lab, model, key)
        if lab.calibration(model) is None:
            _until_calibrated(lab, model)
        return None
    t = time.time()
    # the running traffic's own seconds: a probe's levels just before (64 in flight) are not the traffic predicted
    since = max(t - LIVE_S, lab.traffic().started_at or 0.0)
    live = lab.measure(model, since, t)
    live_column = f"live (last {t - since:.0f} s)"
    rows = []
    for name in SHOWN:
        row = {"figure": label(KEYS[name])}
        if then is not None:  # first: what the page is for, visible in a half-width column
            row["predicted, these knobs"] = _interval(name, getattr(then, name))
        row.update({live_column: _live(live, name),
                    "predicted, as served": _interval(name, getattr(now, name))})
        rows.append(row)
    if any(p is not None and p.host_cpu is not None for p in (now, then)):
        rows.append(_host_row(live, now, then, live_column))
    _table(rows)
    if len(now.classes) > 1:  # priority levels and queue policies act per class: each one's tail and refusals
        _table(_class_rows(live, now, then))
    sure = (then or now).confidence
    st.caption(f"The twin: a discrete-event model of Triton's batcher and instances, calibrated on what this server "
               f"reported ({sure}). Intervals span its seeds, what the calibration allows and at least the error it has "
               f"shown against measurements (latencies {MODEL_LATENCY_SPREAD - 1:.0%} either way); the live column is "
               "measured. A prediction guides; "
               "Apply measures.")
    lacks = (then or now).lacks
    if lacks:
        with st.popover("What it lacks"):
            st.markdown("\n".join(f"- {line}" for line in lacks))
    _probe_button(lab, model, key)
    return then


@st.fragment(run_every=3.0)
def _until_calibrated(lab: LabPort, model: str) -> None:
    """Draw the page again once the twin has learnt from the traffic running: "seen no execution yet" stayed on
    screen beside 547 req/s until something else redrew the page (2026-12-07)."""
    if lab.calibration(model) is not None:
        st.rerun(scope="app")


def _table(rows: list[dict]) -> None:
    """Show rows as a static table: its cells wrap, so every column shows in a page's half-width column, where a
    data frame's fourth column sat past its right edge behind a scroll bar nobody saw (2026-12-07)."""
    st.table(pd.DataFrame(rows), hide_index=True)


def _class_rows(live, now: Prediction, then: Prediction | None) -> list[dict]:
    """Return a row per traffic class: its p99 (and share rejected) predicted for the knobs as set, live and as
    served — the figures a priority level or a queue policy moves, which the whole model's hide."""
    # the shares rejected only where a prediction rejects any: a column of 0 % beside each would crowd the tails out
    refused = any(c.rejected_share.value > 0 for p in (now, then) if p is not None for c in p.classes)
    rows = []
    for i, c in enumerate(now.classes):
        row = {"class (priority)": f"{c.name} ({c.priority})"}
        if then is not None:
            row["p99 ms, these knobs"] = _interval("p99_ms", then.classes[i].p99_ms)
            if refused:
                row["rejected, these knobs"] = f"{then.classes[i].rejected_share.value:.0%}"
        measured = live.row(c.name)
        row[f"p99 ms, live ({live.t1 - live.t0:.0f} s)"] = fmt("p99_ms", measured.p99_ms, unit=False)
        row["p99 ms, as served"] = _interval("p99_ms", c.p99_ms)
        if refused:
            row["rejected, as served"] = f"{c.rejected_share.value:.0%}"
        rows.append(row)
    return rows


def _host_row(live, now: Prediction, then: Prediction | None, live_column: str) -> dict:
    """Return the row of the host's CPUs where the host is the limit: how busy the twin expects them (a config that
    batches less asks more of them at the same rate; near the tipping point the lacks say so) beside how busy they
    are (Triton's nv_cpu_utilization over the live window)."""
    def busy(p: Prediction | None) -> str:
        return "—" if p is None or p.host_cpu is None else f"about {fmt('cpu_util', p.host_cpu, unit=False)}"
    row = {"figure": label("cpu_util")}
    if then is not None:
        row["predicted, these knobs"] = busy(then)
    row.update({live_column: fmt("cpu_util", live.server.cpu_util, unit=False), "predicted, as served": busy(now)})
    return row


def _live(figures, name: str) -> str:
    value = figures.server.avg_batch if name == "mean_batch" else getattr(figures.row(ALL), name)
    return fmt(KEYS[name], value, unit=False)


def _interval(name: str, interval: Interval) -> str:
    key = KEYS[name]
    return f"{fmt(key, interval.value, unit=False)} [{fmt(key, interval.low, unit=False)}–" \
           f"{fmt(key, interval.high, unit=False)}]"


def _probe_button(lab: LabPort, model: str, key: str) -> None:
    """Offer the twin's probe: a few seconds of traffic at a few concurrencies, no config changed."""
    if not can_operate():
        return
    if st.button("Calibrate the twin (a probe of about 6 s, 20 s where the host is the limit)", key=f"{key}:probe", disabled=lab.job_running(),
                 help="closed-loop traffic at a few concurrencies, so the server forms small and large batches; the "
                      "traffic running now stops meanwhile and starts again after"):
        from app.experiments.probe import probe_job  # noqa: PLC0415 - a study's job

        lab.start_job(probe_job(lab, model))
        st.rerun()


def _checks(lab: LabPort, model: str) -> None:
    """Show the twin's latest predictions on this model beside what the window after each change measured."""
    checks = lab.prediction_checks(model)
    if not checks:
        return
    # Open by itself while the newest change is fresh (its own key: an earlier change's closed state does not hide it)
    fresh = time.time() - checks[0].t < FRESH_S
    with st.expander(f"Predicted before the change, measured after it ({checks[0].change})", expanded=fresh,
                     key=f"{model}:checks:{checks[0].run_id}"):
        for c in checks:  # newest first, a table each: five columns fit a half-width column, six did not
            st.caption(f"{time.strftime('%H:%M:%S', time.localtime(c.t))} · {c.change}")
            rows = []
            for name in ("throughput_rps", "p99_ms"):
                measured = (c.measured or {}).get(name)
                error = c.error(name)
                rows.append({"figure": label(KEYS[name]), "predicted": _interval(name, c.interval(name)),
                             "measured (10 s after)": fmt(KEYS[name], measured, unit=False) if c.measured
                             else "waiting…",
                             "error": "—" if error is None else f"{error:+.0%}",
                             "inside": "" if c.inside(name) is None else ("yes" if c.inside(name) else "no")})
            _table(rows)
