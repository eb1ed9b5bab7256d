"""Named knobs (what diagnosis suggests and sweeps vary) applied to ModelSettings."""
from __future__ import annotations

from dataclasses import replace

from app.config.settings import DynamicBatching, InstanceGroup, ModelSettings

# Knobs that live inside dynamic_batching: setting one switches dynamic batching on.
DYNAMIC_KNOBS = ("max_queue_delay_microseconds", "preferred_batch_size", "priority_levels", "default_priority_level",
                 "preserve_ordering")
KNOBS = ("instance_count", "max_batch_size", "dynamic_batching", *DYNAMIC_KNOBS)
# The values the pages' knobs can hold: a suggestion is always one of these.
DELAYS_US = (0, 100, 250, 500, 1000, 2000, 5000, 10000, 20000)
SIZES = (1, 2, 4, 8, 16, 32, 64)
MAX_INSTANCES = 8
DEFAULT_DELAY_US = 500  # the delay dynamic batching gets when the lab switches it on for a fix or a scheduler choice


def with_dynamic(settings: ModelSettings, dyn: DynamicBatching | None) -> ModelSettings:
    """Return settings batched by dyn; the two schedulers exclude each other, so sequence batching goes."""
    return replace(settings, dynamic_batching=dyn, sequence_batching=None if dyn is not None else
                   settings.sequence_batching)


def with_sequence(settings: ModelSettings, seq) -> ModelSettings:
    """Return settings with sequence batching seq (a SequenceBatching); dynamic batching goes."""
    return replace(settings, sequence_batching=seq, dynamic_batching=None)


def small_delay() -> DynamicBatching:
    """Return the dynamic batching the lab switches on: Triton's defaults with DEFAULT_DELAY_US."""
    return DynamicBatching(max_queue_delay_microseconds=DEFAULT_DELAY_US)


def delay_at_most(limit_us: float) -> int:
    """Return the largest delay option not above limit_us (0 when none is)."""
    return max((d for d in DELAYS_US if d <= limit_us), default=0)


def apply_knobs(settings: ModelSettings, knobs: dict) -> ModelSettings:
    """Return settings with each named knob set; unknown knob names are an error."""
    unknown = set(knobs) - set(KNOBS)
    if unknown:
        raise ValueError(f"unknown knob(s) {sorted(unknown)}; known: {', '.join(KNOBS)}")
    out = settings
    if "max_batch_size" in knobs:
        out = replace(out, max_batch_size=int(knobs["max_batch_size"]))
    if "instance_count" in knobs:
        groups = out.instance_groups or (InstanceGroup(),)
        out = replace(out, instance_groups=(replace(groups[0], count=int(knobs["instance_count"])), *groups[1:]))
    if knobs.get("dynamic_batching") is False:
        return replace(out, dynamic_batching=None)
    dyn = out.dynamic_batching
    if dyn is None and (knobs.get("dynamic_batching") or set(DYNAMIC_KNOBS) & set(knobs)):
        dyn = DynamicBatching()
    if dyn is not None:
        if "max_queue_delay_microseconds" in knobs:
            dyn = replace(dyn, max_queue_delay_microseconds=int(knobs["max_queue_delay_microseconds"]))
        if "preferred_batch_size" in knobs:
            dyn = replace(dyn, preferred_batch_sizes=tuple(int(b) for b in knobs["preferred_batch_size"]))
        if "preserve_ordering" in knobs:
            dyn = replace(dyn, preserve_ordering=bool(knobs["preserve_ordering"]))
        if "priority_levels" in knobs or "default_priority_level" in knobs:
            dyn = _priorities(dyn, knobs)
        out = with_dynamic(out, dyn)
    return out


def _priorities(dyn: DynamicBatching, knobs: dict) -> DynamicBatching:
    """Return dyn with the priority knobs set; a level count alone keeps Triton's rules: the default level within
    1..levels (the lowest priority when it was not: unmarked requests go last) and no policy past the last level."""
    levels = int(knobs.get("priority_levels", dyn.priority_levels))
    default = int(knobs.get("default_priority_level", dyn.default_priority_level))
    if "default_priority_level" not in knobs:
        default = 0 if levels == 0 else default if 1 <= default <= levels else levels
    policies = tuple((level, p) for level, p in dyn.priority_queue_policies if level <= levels)
    return replace(dyn, priority_levels=levels, default_priority_level=default, priority_queue_policies=policies)


def describe(knobs: dict) -> str:
    """Return a short human description of a knob change."""
    return ", ".join(f"{k.replace('_microseconds', ' µs').replace('_', ' ')} → {v}" for k, v in knobs.items())


def _flatten(value, prefix: str = "") -> dict:
    if hasattr(value, "__dataclass_fields__"):
        out = {}
        for name in value.__dataclass_fields__:
            out.update(_flatten(getattr(value, name), f"{prefix}.{name}" if prefix else name))
        return out
    if isinstance(value, tuple) and value and all(hasattr(v, "__dataclass_fields__") or isinstance(v, tuple) for v in value):
        out = {}
        for i, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: getattr(value, "value", value)}


def summarize_change(old, new) -> str:
    """Return 'field old→new, ...' for the leaves that differ; a section switched on or off is named once."""
    parts = []
    for name in getattr(old, "__dataclass_fields__", {}):
        before, after = getattr(old, name), getattr(new, name)
        if (before is None) != (after is None):
            parts.append(f"{name} {'on' if after is not None else 'off'}")
            old, new = replace(old, **{name: None}), replace(new, **{name: None})
    a, b = _flatten(old), _flatten(new)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            short = key.replace("dynamic_batching.", "").replace("sequence_batching.", "seq.").replace("_microseconds", "_us")
            parts.append(f"{short} {_fmt(a.get(key, '—'))}→{_fmt(b.get(key, '—'))}")
    return ", ".join(parts) or "no change"


def _fmt(value) -> str:
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    return "—" if value is None else str(value)
