"""Widget sets per concept: each takes the current settings and returns the settings the user set."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.config.settings import (DynamicBatching, InstanceGroup, Kind, ModelSettings, QueuePolicy, SequenceBatching,
                                 Strategy, TimeoutAction)
from app.config.knobs import DELAYS_US, MAX_INSTANCES, SIZES, small_delay, with_dynamic, with_sequence

COST_PARAMS = {
    "launch_overhead_us": "launch overhead (µs per execution)",
    "copy_us_per_kib": "host↔device copy (µs per KiB)",
    "compute_us_batch1": "compute at batch 1 (µs)",
    "compute_batch_exponent": "compute growth exponent (1 = linear)",
    "compute_saturation_batch": "saturation batch (linear beyond)",
    "compute_overflow_exponent": "growth past saturation (1 = linear; above 1: pattern C)",
}


def server_gpus() -> int:
    """Return how many GPUs the lab's server reports (0 on a CPU server or when it cannot be asked)."""
    from app.ui.state import get_lab  # noqa: PLC0415 - the process's one Lab

    try:
        return get_lab().server_caps().gpu_count
    except Exception:  # noqa: BLE001 - without an answer, offer no GPU list
        return 0


def instances(s: ModelSettings, key: str) -> ModelSettings:
    """Instance count and kind (as Triton serves them); the simulated device's costs for gpu_sim."""
    group = s.instance_groups[0] if s.instance_groups else InstanceGroup()
    count = st.slider("Instances (instance_group.count)", 1, max(MAX_INSTANCES, group.count), max(group.count, 1),
                      key=f"{key}:count")
    kinds = _options([Kind.CPU.value, Kind.GPU.value], group.kind.value)
    kind = st.radio("Kind", kinds, index=kinds.index(group.kind.value), horizontal=True, key=f"{key}:kind",
                    help="KIND_GPU needs a GPU server (compose.yaml)")
    gpus = group.gpus if kind == Kind.GPU.value else ()
    available = server_gpus()
    if kind == Kind.GPU.value and available:
        gpus = tuple(st.multiselect("GPUs (instance_group.gpus; none: every GPU)", list(range(available)),
                                    default=[g for g in group.gpus if g < available], key=f"{key}:gpus"))
    moved = replace(group, count=count, kind=Kind(kind), gpus=gpus)
    out = s if moved == group else replace(s, instance_groups=(moved, *s.instance_groups[1:]))
    params = dict(s.parameters)
    if any(p in params for p in COST_PARAMS):
        with st.expander("Simulated device (labelled cost model)"):
            for name, label in COST_PARAMS.items():
                if name in params:
                    value = st.number_input(label, min_value=0.0, value=float(params[name]), key=f"{key}:{name}")
                    params[name] = keep_text(params[name], value)
        out = replace(out, parameters=params)
    return out


def dynamic(s: ModelSettings, key: str) -> ModelSettings:
    """Dynamic batching: on/off, max_batch_size, preferred sizes, delay, ordering (values as Triton serves them)."""
    dyn = s.dynamic_batching
    if s.sequence_batching is not None:
        st.info("This model uses sequence batching (it keeps state per sequence): the dynamic batcher would mix "
                "its sequences. Tune it on the Sequence batching page.")
        return s
    mbs = st.select_slider("max_batch_size", options=_options(SIZES + (0,), s.max_batch_size), value=s.max_batch_size,
                           key=f"{key}:mbs", format_func=lambda v: "0 (no batching)" if v == 0 else str(v))
    if (s.max_batch_size > 0) != (mbs > 0):
        st.warning("This changes the model's contract: with max_batch_size > 0 every request carries a leading "
                   "batch dimension ([rows, ...dims]); with 0 it does not. Clients built for one fail on the other "
                   "— Apply asks you to confirm, and the lab's own traffic is rebuilt for the new shape.")
    out = replace(s, max_batch_size=mbs)
    if mbs == 0:
        if dyn is not None:
            st.caption("Without a batch dimension there is nothing to batch: Apply turns dynamic batching off.")
        elif s.max_batch_size == 0:
            st.caption("This model takes no batch dimension (max_batch_size 0), so Triton cannot batch its "
                       "requests. Raise max_batch_size to let the dynamic batcher form batches.")
        return replace(out, dynamic_batching=None)
    on = st.toggle("Dynamic batching", value=dyn is not None, key=f"{key}:on")
    if not on:
        return replace(out, dynamic_batching=None)
    dyn = dyn or DynamicBatching()
    delay = st.select_slider("max_queue_delay_microseconds", options=_options(DELAYS_US, dyn.max_queue_delay_microseconds),
                             value=dyn.max_queue_delay_microseconds, key=f"{key}:delay")
    sizes = _options(SIZES, *dyn.preferred_batch_sizes)
    preferred = st.multiselect("preferred_batch_size", options=sizes, default=list(dyn.preferred_batch_sizes),
                               key=f"{key}:pref")
    ordering = st.checkbox("preserve_ordering", value=dyn.preserve_ordering, key=f"{key}:order")
    moved = replace(dyn, max_queue_delay_microseconds=delay, preserve_ordering=ordering,
                    preferred_batch_sizes=tuple(sorted(preferred)) if sorted(preferred) != sorted(dyn.preferred_batch_sizes)
                    else dyn.preferred_batch_sizes)
    return with_dynamic(out, moved)


NEITHER = "neither (as it serves now)"


def sequence(s: ModelSettings, key: str) -> ModelSettings:
    """Sequence batching (direct or oldest), or the wrong choice for a stateful model: dynamic batching."""
    modes = ["sequence batching", "dynamic batching (wrong for a stateful model)"]
    if s.sequence_batching is None and s.dynamic_batching is None:  # picking such a model proposes nothing
        modes.insert(0, NEITHER)
    now = modes[-2] if s.sequence_batching is not None else modes[-1] if s.dynamic_batching is not None else NEITHER
    mode = st.radio("Scheduler", modes, index=modes.index(now), key=f"{key}:mode")
    if mode == NEITHER:
        return s
    if mode != modes[-2]:
        if s.dynamic_batching is not None:
            return s
        return with_dynamic(s, small_delay())
    seq = s.sequence_batching or SequenceBatching(max_sequence_idle_microseconds=5_000_000)
    strategies = [Strategy.OLDEST.value, Strategy.DIRECT.value]
    strategy = st.radio("Strategy", strategies, index=strategies.index(seq.strategy.value), horizontal=True, key=f"{key}:strat")
    idle = st.number_input("max_sequence_idle_microseconds (0 = Triton's 1 s)", 0, 600_000_000,
                           seq.max_sequence_idle_microseconds, step=1_000_000, key=f"{key}:idle")
    moved = replace(seq, strategy=Strategy(strategy), max_sequence_idle_microseconds=int(idle))
    if strategy == Strategy.OLDEST.value:
        cand = st.number_input("max_candidate_sequences (0 = Triton's default)", 0, 1024, seq.max_candidate_sequences,
                               key=f"{key}:cand")
        delay = st.select_slider("max_queue_delay_microseconds", options=_options(DELAYS_US, seq.max_queue_delay_microseconds),
                                 value=seq.max_queue_delay_microseconds, key=f"{key}:sdelay")
        sizes = _options(SIZES, *seq.preferred_batch_sizes)
        pref = st.multiselect("preferred_batch_size", sizes, list(seq.preferred_batch_sizes), key=f"{key}:spref")
        moved = replace(moved, max_candidate_sequences=int(cand), max_queue_delay_microseconds=delay,
                        preferred_batch_sizes=tuple(sorted(pref)) if sorted(pref) != sorted(seq.preferred_batch_sizes)
                        else seq.preferred_batch_sizes)
    elif seq.strategy is not Strategy.DIRECT:
        moved = replace(moved, max_candidate_sequences=0, preferred_batch_sizes=(), max_queue_delay_microseconds=0)
    if s.sequence_batching is not None and moved == seq:
        return s
    return with_sequence(s, moved)


def priority(s: ModelSettings, key: str) -> ModelSettings:
    """Priority levels and per-level queue policies (timeout action, timeout, queue bound)."""
    if s.max_batch_size == 0 or s.sequence_batching is not None:
        st.info("Priority levels and queue policies belong to the dynamic batcher, which needs a batch dimension "
                "(max_batch_size > 0) and a stateless model: set them up on the Dynamic batching page first.")
        return s
    dyn = s.dynamic_batching or small_delay()
    levels = st.number_input("priority_levels (0 = off)", 0, 8, dyn.priority_levels, key=f"{key}:levels")
    default = st.number_input("default_priority_level (1 = highest)", 1, 8,
                              min(max(dyn.default_priority_level, 1), max(int(levels), 1)), key=f"{key}:default")
    policies = dict(dyn.priority_queue_policies)
    out_policies = []
    for level in range(1, int(levels) + 1):
        p = policies.get(level, QueuePolicy())
        st.markdown(f"**Level {level}** {'(highest)' if level == 1 else ''}")
        c1, c2, c3 = st.columns(3)
        action = c1.selectbox("timeout action", [a.value for a in TimeoutAction],
                              index=[a.value for a in TimeoutAction].index(p.timeout_action.value), key=f"{key}:act{level}")
        timeout = c2.number_input("timeout µs (0 = none)", 0, 60_000_000, p.default_timeout_microseconds, step=1000,
                                  key=f"{key}:to{level}")
        qmax = c3.number_input("max_queue_size (0 = ∞)", 0, 100_000, p.max_queue_size, key=f"{key}:q{level}")
        if timeout or qmax or action != TimeoutAction.REJECT.value or level in policies:
            override = p.allow_timeout_override if level in policies else True
            out_policies.append((level, QueuePolicy(TimeoutAction(action), int(timeout), override, int(qmax))))
    moved = replace(dyn, priority_levels=int(levels), default_priority_level=int(default) if levels else 0,
                    priority_queue_policies=tuple(out_policies) if levels else ())
    if moved == dyn or (s.dynamic_batching is None and not levels):
        return s
    return with_dynamic(s, moved)


def keep_text(text: str, value: float) -> str:
    """Return the parameter's own text when the number is unchanged ("16" stays "16", never "16.0")."""
    try:
        if float(text) == value:
            return text
    except ValueError:
        pass
    return f"{value:g}" if value == int(value) or abs(value) >= 1e-4 else repr(value)


def _options(choices, *current):
    """Return the choices plus the values the config holds now, sorted: a widget never snaps a served value to a
    nearby choice (which would propose a change nobody made)."""
    return sorted(set(choices) | set(current))
