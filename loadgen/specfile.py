"""Load specs from YAML or plain dicts, and back to plain dicts for JSON."""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from enum import Enum
from pathlib import Path

from loadgen.spec import LoadSpec


def load_spec(path: str | Path, **overrides) -> LoadSpec:
    """Read a LoadSpec from a YAML file; keyword overrides replace top-level fields."""
    import yaml  # noqa: PLC0415 - only the CLI and the dashboard read files

    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a spec file must hold a mapping of LoadSpec fields")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return spec_from_dict(data)


def spec_from_dict(data: dict) -> LoadSpec:
    """Build a LoadSpec from nested dicts and lists."""
    return build(LoadSpec, data, "spec")


def spec_to_dict(spec) -> dict:
    """Return a dataclass tree as plain JSON-ready values."""
    if dataclasses.is_dataclass(spec):
        return {f.name: spec_to_dict(getattr(spec, f.name)) for f in dataclasses.fields(spec)}
    if isinstance(spec, (tuple, list)):
        return [spec_to_dict(v) for v in spec]
    if isinstance(spec, Enum):
        return spec.value
    return spec


def build(kind, value, where: str):
    """Convert value to the annotated type kind (dataclasses, tuples, optionals, enums, scalars)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return build(next(a for a in args if a is not type(None)), value, where)
    if dataclasses.is_dataclass(kind):
        if isinstance(value, kind):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a mapping for {kind.__name__}, got {value!r}")
        hints = _hints(kind)
        known = {f.name for f in dataclasses.fields(kind)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; {kind.__name__} has {sorted(known)}")
        try:
            return kind(**{k: build(hints[k], v, f"{where}.{k}") for k, v in value.items()})
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if origin is tuple:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if isinstance(value, dict) and len(args) == 2 and _named(args[0]):
            items = _named_items(value, where)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(build(args[0], v, f"{where}[{i}]") for i, v in enumerate(items))
        return tuple(build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, items)))
    return _scalar(kind, value, where)


@functools.cache
def _hints(kind) -> dict:
    """Return a dataclass's resolved field types, once per class (resolving the annotations, which are text here,
    took 0.33 ms a spec: 2.7 s of the 8,000 built in a test of A/B verdicts)."""
    return typing.get_type_hints(kind)


def _named(kind) -> bool:
    return dataclasses.is_dataclass(kind) and "name" in {f.name for f in dataclasses.fields(kind)}


def _named_items(value: dict, where: str) -> list:
    """Return a mapping {NAME: {fields}} as a list of [{name: NAME, fields...}] (how YAML names inputs)."""
    items = []
    for key, fields in value.items():
        name, fields = str(key), {} if fields is None else fields  # YAML reads a key 0 as a number
        if not isinstance(fields, dict):
            raise ValueError(f"{where}.{name}: expected a mapping of fields, e.g. {{dims: [16]}}, got {fields!r}")
        if fields.get("name", name) != name:
            raise ValueError(f"{where}.{name}: the key names it {name!r}, its name field says {fields['name']!r}")
        items.append({**fields, "name": name})
    return items


def _scalar(kind, value, where: str):
    """Convert numbers and text (from YAML or the command line) to a float, int or bool field."""
    if kind is bool and isinstance(value, str):
        if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value.lower() in ("true", "1", "yes")
    if kind in (float, int) and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            return kind(value)
        except (ValueError, OverflowError):  # OverflowError: int(inf) from a YAML .inf
            raise ValueError(f"{where}: expected a finite number, got {value!r}") from None
    return value
