"""A configuration defined on the spot: knob assignments over the serving config, or a pasted config.pbtxt.

`delay_us=5000 instances=2` moves the concept knobs (app.config.knobs) on the config the model serves and names the
result by what it changes ("instances 1 → 2, delay 500 → 5000 µs"); a pasted config.pbtxt is taken as written and
named by how its knobs differ from the serving config. Assignments are separated by spaces or ';', a list by
commas (`preferred=4,8`). Every value is checked against the same bounds as an Apply (app.config.validate.Limits),
and combinations the model cannot take are refused with the way out, before anything reaches a server.
"""
from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.model_config import ModelConfig, copy_config, format_config, parse_config
from app.config.read import settings_of
from app.config.rebase import rebase
from app.config.settings import DynamicBatching, ModelSettings
from app.config.text_edit import TextEditError, patch_text
from app.config.validate import Limits
from app.config.knobs import DYNAMIC_KNOBS, apply_knobs
from app.text_limits import MAX_ARM_CHARS, config_size_problem, fit
from loadgen.limits import LIMITS

SERVING = "serving"  # an arm that changes nothing: the serving config itself
_ON, _OFF = ("on", "true", "yes", "1"), ("off", "false", "no", "0")
_NONE = ("none", "")
_LIMITS = Limits()


@dataclass(frozen=True)
class Knob:
    """A knob as people type it: its app.config.knobs name, the kind of value, the range and the unit."""

    name: str
    knob: str  # app.config.knobs name
    kind: str  # int | bool | sizes
    low: float = 0
    high: float = 0
    unit: str = ""
    scale: int = 1  # what one typed unit is in the knob's unit (delay_ms: 1000 µs)
    whole: bool = True

    def parse(self, text: str):
        """Return the knob's value from its typed text; ValueError saying what was typed and what fits."""
        text = text.strip()
        if self.kind == "bool":
            if text.lower() in _ON:
                return True
            if text.lower() in _OFF:
                return False
            raise ValueError(f"{self.name}={text!r}: say on or off")
        if self.kind == "sizes":
            if text.lower() in _NONE:
                return ()
            sizes = tuple(self._number(part, f"{self.name}={text!r}: each size") for part in text.split(","))
            most = int(LIMITS["preferred_sizes"].high)
            if len(sizes) > most:
                raise ValueError(f"{self.name}={text!r}: at most {most} preferred sizes")
            if len(set(sizes)) != len(sizes):
                raise ValueError(f"{self.name}={text!r}: a size is listed twice")
            return tuple(sorted(sizes))
        return round(self._number(text, f"{self.name}={text!r}") * self.scale)

    def _number(self, text: str, what: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            value = math.nan
        unit = f" of {self.unit}" if self.unit else ""
        rule = f"a {'whole ' if self.whole else ''}number{unit} from {_n(self.low)} to {_n(self.high)}"
        if not math.isfinite(value) or not self.low <= value <= self.high or (self.whole and value != int(value)):
            raise ValueError(f"{what} must be {rule}")
        return int(value) if self.whole else value


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("instances", "instance_count", "int", 1, _LIMITS.max_instances),
    Knob("max_batch_size", "max_batch_size", "int", 0, _LIMITS.max_batch_size),
    Knob("dynamic", "dynamic_batching", "bool"),
    Knob("delay_us", "max_queue_delay_microseconds", "int", 0, _LIMITS.max_queue_delay_us, "µs"),
    Knob("delay_ms", "max_queue_delay_microseconds", "int", 0, _LIMITS.max_queue_delay_us / 1000, "ms", 1000, False),
    Knob("preferred", "preferred_batch_size", "sizes", 1, _LIMITS.max_batch_size),
    Knob("priority_levels", "priority_levels", "int", 0, _LIMITS.max_priority_levels),
    Knob("default_priority", "default_priority_level", "int", 0, _LIMITS.max_priority_levels),
    Knob("preserve_ordering", "preserve_ordering", "bool"),
)}
PRIMARY = {k.knob: name for name, k in KNOBS.items() if name != "delay_ms"}  # how messages name a knob
ALIASES = {"instance_count": "instances", "dynamic_batching": "dynamic", "max_queue_delay_microseconds": "delay_us",
           "preferred_batch_size": "preferred", "default_priority_level": "default_priority"}


@dataclass(frozen=True)
class ArmConfig:
    """A configuration to compare: its name (what it changes), what it serves, and the text an A/B writes."""

    name: str
    config: ModelConfig
    text: str
    changes: tuple[str, ...] = ()


def parse_assignments(text: str) -> dict[str, object]:
    """Return {app.config.knobs name: value} of 'delay_us=5000 instances=2; preferred=4,8' ('serving' or '': none)."""
    text = re.sub(r"\s*([=,])\s*", r"\1", text.strip())
    if text.lower() in ("", SERVING):
        return {}
    out: dict[str, object] = {}
    typed: dict[str, str] = {}
    for part in re.split(r"[\s;]+", text):
        name, eq, value = part.partition("=")
        if not eq or not name:
            raise ValueError(f"{part!r} is not an assignment: write knob=value, e.g. delay_us=5000 (knobs: "
                             f"{', '.join(KNOBS)})")
        knob = KNOBS.get(ALIASES.get(name.lower(), name.lower()))
        if knob is None:
            near = difflib.get_close_matches(name.lower(), [*KNOBS, *ALIASES], n=1)
            hint = f"did you mean {ALIASES.get(near[0], near[0])}? " if near else ""
            raise ValueError(f"unknown knob {name!r}: {hint}known: {', '.join(KNOBS)}")
        if knob.knob in out:
            raise ValueError(f"{name} sets {typed[knob.knob]}'s knob again: give each knob once")
        out[knob.knob], typed[knob.knob] = knob.parse(value), name
    return out


def checked(knobs: Mapping) -> dict[str, object]:
    """Return {app.config.knobs name: value} of a mapping (a form's), each value held to its knob's range as if typed."""
    out = {}
    for name, value in knobs.items():
        knob = KNOBS.get(PRIMARY.get(name, name))
        if knob is None:
            raise ValueError(f"unknown knob {name!r}: known: {', '.join(PRIMARY)}")
        typed = (("on" if value else "off") if isinstance(value, bool) else
                 ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value))
        out[knob.knob] = knob.parse(typed)
    return out


def from_knobs(served: ModelConfig, assignments: str | Mapping, file_text: str | None = None) -> ArmConfig:
    """Return the served config with the knobs set, named by what changes; file_text (the model's config.pbtxt):
    the text is that file edited in place (comments kept), else the served config written out."""
    knobs = parse_assignments(assignments) if isinstance(assignments, str) else checked(assignments)
    base = settings_of(served)
    _check(base, knobs, served.name or "the model")
    settings = apply_knobs(base, knobs)
    config = set_settings(served, settings)
    changes = describe_change(base, settings)
    name = ", ".join(changes) if changes else f"{summary(base)} ({SERVING})"
    return ArmConfig(fit(name, MAX_ARM_CHARS), config, _text(served, config, file_text), changes)


def from_text(served: ModelConfig, text: str) -> ArmConfig:
    """Return a pasted config.pbtxt as an arm, taken as written; named 'pasted: <what differs from serving>'."""
    if (too_large := config_size_problem(text)) is not None:
        raise ValueError(too_large)
    try:
        config = parse_config(text, source="the pasted config.pbtxt")
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc
    if config.name and served.name and config.name != served.name:
        raise ValueError(f"the pasted config.pbtxt is for model {config.name!r}, not {served.name!r}: paste "
                         f"{served.name}'s config or remove its name line")
    base = settings_of(served)
    try:
        settings = settings_of(config)
    except ConfigError as exc:
        raise ValueError(f"the pasted config.pbtxt: {exc}") from exc
    if not settings.instance_groups:  # none written: Triton fills them in as it serves them now
        settings = replace(settings, instance_groups=base.instance_groups)
    changes = describe_change(base, settings)
    name = "pasted: " + (", ".join(changes) if changes else "no knob differs from serving")
    return ArmConfig(fit(name, MAX_ARM_CHARS), config, text, changes)


def define(served: ModelConfig, text: str, file_text: str | None = None) -> ArmConfig:
    """Return the arm text defines: a pasted config.pbtxt when it has ':' or '{' (no assignment has), else knob
    assignments over the served config."""
    return from_text(served, text) if re.search(r"[:{]", text) else from_knobs(served, text, file_text)


def summary(settings: ModelSettings) -> str:
    """Return what a config is in knob words: '2 instances, max batch 32, delay 500 µs, preferred [4, 8]'."""
    count = sum(g.count for g in settings.instance_groups) or 1
    parts = [f"{count} instance{'s' if count != 1 else ''}"]
    if not settings.max_batch_size:
        return f"{parts[0]}, no batching"
    parts.append(f"max batch {settings.max_batch_size}")
    dyn = settings.dynamic_batching
    if dyn is None:
        parts.append("sequence batching" if settings.sequence_batching else "no dynamic batching")
        return ", ".join(parts)
    parts.append(f"delay {dyn.max_queue_delay_microseconds} µs")
    if dyn.preferred_batch_sizes:
        parts.append(f"preferred {_sizes(dyn.preferred_batch_sizes)}")
    if dyn.priority_levels:
        parts.append(f"{dyn.priority_levels} priority levels")
    return ", ".join(parts)


def describe_change(old: ModelSettings, new: ModelSettings) -> tuple[str, ...]:
    """Return each concept knob that differs, as 'delay 500 → 5000 µs' (a section switched on or off: 'dynamic
    batching on')."""
    out = []
    before, after = (sum(g.count for g in s.instance_groups) for s in (old, new))
    if before != after:
        out.append(f"instances {before} → {after}")
    if old.max_batch_size != new.max_batch_size:
        out.append(f"max batch {old.max_batch_size} → {new.max_batch_size}")
    a, b = old.dynamic_batching, new.dynamic_batching
    if (a is None) != (b is None):
        out.append(f"dynamic batching {'on' if b is not None else 'off'}")
    if (old.sequence_batching is None) != (new.sequence_batching is None):
        out.append(f"sequence batching {'on' if new.sequence_batching is not None else 'off'}")
    elif old.sequence_batching != new.sequence_batching:
        out.append("sequence batching changed")
    if b is not None:
        a = a or DynamicBatching()
        for what, x, y, unit in (
                ("delay", a.max_queue_delay_microseconds, b.max_queue_delay_microseconds, " µs"),
                ("preferred", _sizes(a.preferred_batch_sizes), _sizes(b.preferred_batch_sizes), ""),
                ("priority levels", a.priority_levels, b.priority_levels, ""),
                ("default priority", a.default_priority_level, b.default_priority_level, ""),
                ("preserve ordering", _onoff(a.preserve_ordering), _onoff(b.preserve_ordering), "")):
            if x != y:
                out.append(f"{what} {x} → {y}{unit}")
        if a.default_queue_policy != b.default_queue_policy or a.priority_queue_policies != b.priority_queue_policies:
            out.append("queue policies changed")
    p, q = dict(old.parameters), dict(new.parameters)
    out += [f"parameter {k} {p.get(k, '—')} → {q.get(k, '—')}" for k in sorted(set(p) | set(q))
            if p.get(k) != q.get(k)]
    return tuple(out)


def _check(base: ModelSettings, knobs: dict, model: str) -> None:
    """Refuse knobs the model cannot take as they stand, saying which knob to add or drop."""
    moved = [k for k in DYNAMIC_KNOBS if k in knobs]  # knobs inside dynamic_batching
    listed = ", ".join(PRIMARY[k] for k in moved)
    switch = knobs.get("dynamic_batching")  # True, False or not given
    if switch is False:
        if moved:
            raise ValueError(f"dynamic=off leaves nothing for {listed} to set: drop one of them")
        return
    if base.sequence_batching is not None and moved and switch is not True:
        raise ValueError(f"{model} uses sequence batching (a stateful model): {listed} would replace it with dynamic "
                         "batching and its sequences would lose their state; add dynamic=on to switch on purpose")
    dynamic = bool(moved) or switch is True or base.dynamic_batching is not None  # on once the arm is applied
    mbs = int(knobs.get("max_batch_size", base.max_batch_size))
    if dynamic and mbs == 0:
        if "max_batch_size" in knobs:
            raise ValueError("max_batch_size=0 (no batching) leaves dynamic batching on: add dynamic=off")
        raise ValueError(f"{model} has max_batch_size 0 (it cannot batch): {listed or 'dynamic=on'} needs "
                         "max_batch_size > 0; add max_batch_size=N — a contract change: clients then send a batch "
                         "dimension")
    dyn = base.dynamic_batching or DynamicBatching()
    preferred = knobs.get("preferred_batch_size", dyn.preferred_batch_sizes)
    if dynamic and (over := [s for s in preferred if s > mbs]):
        fix = (f"lower them or set max_batch_size={max(over)}" if "preferred_batch_size" in knobs
               else f"add preferred=… within {mbs}, or preferred=none")
        raise ValueError(f"preferred sizes {over} are above max_batch_size {mbs}: {fix}")
    levels = int(knobs.get("priority_levels", dyn.priority_levels))
    if "default_priority_level" in knobs:
        default = int(knobs["default_priority_level"])
        if levels == 0 and default:
            raise ValueError(f"default_priority={default} needs priority levels: add priority_levels={default} or more")
        if levels and not 1 <= default <= levels:
            raise ValueError(f"default_priority={default} must be a level from 1 to {levels} (priority_levels)")
    if dynamic and bool(knobs.get("preserve_ordering", dyn.preserve_ordering)) and levels > 1:
        raise ValueError(f"preserve_ordering=on allows one priority level, not {levels}: turn it off or set "
                         "priority_levels=1")


def _text(served: ModelConfig, config: ModelConfig, file_text: str | None) -> str:
    """Return the text an A/B writes: the model's own file with exactly the knobs moved, else the config written."""
    if file_text is None:
        return format_config(config)
    try:
        file = parse_config(file_text, source="the model's config.pbtxt")
    except ConfigError:
        return format_config(config)
    named = copy_config(file)
    named.name = named.name or served.name
    new = rebase(named, served, config)
    if not file.name:  # Triton takes the folder's name: a file that leaves it out keeps leaving it out
        new.ClearField("name")
    try:
        return patch_text(file_text, new)
    except TextEditError:
        return format_config(new)


def _n(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:,g}"


def _sizes(sizes: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, sizes))}]" if sizes else "none"


def _onoff(value: bool) -> str:
    return "on" if value else "off"
