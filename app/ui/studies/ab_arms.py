"""The A/B form's configurations: each defined on the spot — concept knobs set over the serving config, or a pasted
config.pbtxt (app.experiments.ab.arms) — or taken from a sweep point or a saved run; each shown by its name (what it
changes) and its diff against the serving config before the comparison starts."""
from __future__ import annotations

import dataclasses
import string
from dataclasses import dataclass

import streamlit as st

from app.config.history import unified_diff
from app.config.read import settings_of
from app.config.settings import DynamicBatching
from app.config.validate import Limits
from app.experiments.ab.comparison import Arm
from app.experiments.ab.arms import KNOBS, ArmConfig, from_knobs, from_text
from app.store.database import DONE
from app.experiments.stored import read_sweep
from app.lab.ports import LabPort
from app.text_limits import MAX_ARM_CHARS, fit
from app.ui.access import guarded
from app.ui.text import literal

SERVING, SET_KNOBS, PASTE, NO_ARM = "serving now", "set knobs over the serving config", "paste a config.pbtxt", "—"
PREFILL = "exp:ab_prefill"  # {model, sources: {name: config text}}: configurations a sweep handed to the form
MODEL_KEY = "exp:ab_model"
_LIMITS = Limits()


def arm_key(i: int) -> str:
    """Return the session key of configuration i's source (A: 0)."""
    return f"exp:ab_arm{i}"


def prefill(model: str, picks: list[tuple[str, str]]) -> None:
    """Fill the A/B form with stored configurations, A first: (name, config text) each (a button's on_click)."""
    st.session_state[MODEL_KEY] = model
    st.session_state[PREFILL] = {"model": model, "sources": dict(picks)}
    for i in range(3):
        st.session_state[arm_key(i)] = picks[i][0] if i < len(picks) else NO_ARM


@dataclass(frozen=True)
class ServedNow:
    """What every arm starts from: the config the model serves, its text, and the model's config.pbtxt."""

    model: str
    config: object  # ModelConfig
    text: str
    file_text: str | None


def serving(lab: LabPort, model: str) -> ServedNow:
    """Return the model's serving config (its config.pbtxt when it is not loaded) and the texts arms edit."""
    return ServedNow(model, lab.served_config(model), lab.served_text(model), lab.file_text(model))


def stored_sources(lab: LabPort, model: str) -> dict[str, str]:
    """Return name -> config text of stored configurations: a sweep's hand-over first, then the points of the latest
    sweeps (each configuration once, its operating point and runner-up marked) and saved runs."""
    handed = st.session_state.get(PREFILL) or {}
    out = dict(handed.get("sources") or {}) if handed.get("model") == model else {}
    for study in lab.studies(kind="sweep", model=model)[:5]:
        record = read_sweep(lab, study)  # a sweep that cannot be read offers nothing, and breaks nothing
        if record.broken:
            continue
        named = study.result.get("recommendation") if isinstance(study.result.get("recommendation"), dict) else {}
        tags = {study.result.get("best"): " (recommended)", named.get("runner_up"): " (runner-up)"}
        for p in record.points:
            if p.status == DONE and p.config_text:
                out.setdefault(f"sweep {study.id}: {p.choice.label}{tags.get(p.key, '')}", p.config_text)
    for run in lab.runs(model=model)[:20]:
        if not run.broken and run.config_text:
            out.setdefault(f"saved run {run.id}: {run.label}", run.config_text)
    return out


def define_arms(lab: LabPort, model: str, count: int = 3) -> list[Arm] | None:
    """Draw one column per configuration (A, B, optional C): its source, its knobs or text, its name and diff; return
    the arms to compare, or None while one cannot be defined (what is wrong shown under it)."""
    try:
        base = serving(lab, model)
    except Exception as exc:  # noqa: BLE001 - the rest of the page still draws
        st.error(f"The config {literal(model)} serves could not be read ({literal(guarded(exc))}): no configuration "
                 "can be defined over it.")
        return None
    stored = stored_sources(lab, model)
    cols = st.columns(count)
    defined: list[tuple[str, ArmConfig | None]] = []
    for i in range(count):
        letter = string.ascii_uppercase[i]
        with cols[i]:
            options = ([NO_ARM] if i >= 2 else []) + [SERVING, SET_KNOBS, PASTE, *stored]
            if st.session_state.get(arm_key(i)) not in (None, *options):
                st.session_state.pop(arm_key(i))  # a source of another model, or one deleted since
            default = options.index({0: SERVING, 1: SET_KNOBS}.get(i, NO_ARM))
            held = arm_key(i) in st.session_state  # chosen before, or handed over by a sweep: no default beside it
            pick = st.selectbox(f"Configuration {letter}", options, index=0 if held else default, key=arm_key(i))
            if pick == NO_ARM:
                continue
            defined.append((letter, _one(base, i, pick, stored)))
    if any(arm is None for _, arm in defined):
        return None
    arms = [Arm(fit(f"{letter} ({arm.name})", MAX_ARM_CHARS), arm.text) for letter, arm in defined]
    same = [f"{a.name[:1]} and {b.name[:1]}" for j, a in enumerate(arms) for b in arms[j + 1:]
            if a.config_text == b.config_text]
    if same:
        st.caption(f"{'; '.join(same)} are the same configuration: the comparison measures the noise between them.")
    return arms


def _one(base: ServedNow, i: int, pick: str, stored: dict[str, str]) -> ArmConfig | None:
    """Define configuration i from its source, show its name and diff; None (with the reason shown) when it cannot."""
    try:
        if pick == SERVING:
            arm = from_knobs(base.config, {}, base.file_text)
        elif pick == SET_KNOBS:
            arm = from_knobs(base.config, _knob_widgets(base, i), base.file_text)
        elif pick == PASTE:
            text = st.text_area("config.pbtxt", key=f"exp:ab_paste{i}:{base.model}", height=180,
                                placeholder="paste a whole config.pbtxt; fields it leaves out take Triton's defaults")
            if not text.strip():
                st.caption("Paste a config.pbtxt to compare it.")
                return None
            arm = from_text(base.config, text)
        else:
            arm = from_text(base.config, stored[pick])
            changes = ", ".join(arm.changes) or "no knob differs from serving"
            arm = dataclasses.replace(arm, name=fit(f"{pick.split(':', 1)[0]}: {changes}", MAX_ARM_CHARS))
    except ValueError as exc:
        st.error(literal(exc))
        return None
    st.markdown(f"**{string.ascii_uppercase[i]}:** {literal(arm.name)}")
    diff = unified_diff(base.text, arm.text, "serving", string.ascii_uppercase[i])
    with st.expander("Its diff against the serving config", expanded=False):
        st.code(diff or "the same config as serving", language="diff")
    return arm


def _knob_widgets(base: ServedNow, i: int) -> dict[str, object]:
    """Draw the concept knobs at the serving config's values; return the knobs moved from them (arms' names)."""
    settings = settings_of(base.config)
    dyn = settings.dynamic_batching
    now = {"instances": sum(g.count for g in settings.instance_groups) or 1, "dynamic": dyn is not None,
           "max_batch_size": settings.max_batch_size,
           "delay_us": (dyn or DynamicBatching()).max_queue_delay_microseconds,
           "preferred": tuple(sorted((dyn or DynamicBatching()).preferred_batch_sizes)),
           "priority_levels": (dyn or DynamicBatching()).priority_levels}
    key = f"exp:ab_knob{i}:{base.model}:"
    a, b = st.columns(2)
    chosen = {
        "instances": a.number_input("instances", 1, _LIMITS.max_instances, now["instances"], key=key + "instances"),
        "max_batch_size": b.number_input("max_batch_size", 0, _LIMITS.max_batch_size, now["max_batch_size"],
                                         key=key + "mbs", help="0: no batch dimension; changing it from or to 0 "
                                         "changes what clients send (a contract change)"),
        "dynamic": st.checkbox("dynamic batching", now["dynamic"], key=key + "dynamic"),
    }
    off = not chosen["dynamic"]
    c, d = st.columns(2)
    chosen["delay_us"] = c.number_input("max_queue_delay (µs)", 0, _LIMITS.max_queue_delay_us, now["delay_us"],
                                        step=500, key=key + "delay", disabled=off)
    chosen["priority_levels"] = d.number_input("priority levels", 0, _LIMITS.max_priority_levels,
                                               now["priority_levels"], key=key + "levels", disabled=off)
    typed = st.text_input("preferred batch sizes (e.g. 4,8; empty: none)", ",".join(map(str, now["preferred"])),
                          key=key + "preferred", disabled=off)
    chosen["preferred"] = KNOBS["preferred"].parse(typed)  # ValueError: shown under the arm
    if off:  # the section's knobs are not set without it
        chosen.update({k: now[k] for k in ("delay_us", "priority_levels", "preferred")})
    return {k: v for k, v in chosen.items() if v != now[k]}
