"""Random valid edits of any protobuf message, driven by its descriptor, for property tests of config text edits."""
from __future__ import annotations

import random

from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import Message

INTS = (0, 1, 2, 7, 64, 1000, -1, 2**31 - 1)
STRINGS = ("", "x", "INPUT", "a b", 'q"uote', "it's", "back\\slash", "ünï", "new\nline", "#not a comment", "7.5")
FLOATS = (0.0, 0.5, 1e-3, -2.25, 3.0, float("inf"), 1e20)
KEYS = ("k1", "k2", "zz", "x", "a b")
MAX_DEPTH = 4


def is_map(f: FD) -> bool:
    """Whether the field is a map (a repeated message of key/value entries)."""
    return f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def scalar(f: FD, rng: random.Random):
    """A random valid value for a scalar field (enums: one of its named numbers)."""
    if f.type == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if f.type == FD.TYPE_STRING:
        return rng.choice(STRINGS)
    if f.type == FD.TYPE_BYTES:
        return rng.choice(STRINGS).encode()
    if f.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return rng.choice(FLOATS)
    if f.type == FD.TYPE_ENUM:
        return rng.choice([v.number for v in f.enum_type.values])
    if f.type in (FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_FIXED32, FD.TYPE_FIXED64):
        return abs(rng.choice(INTS))
    return rng.choice(INTS)


def mutate(message: Message, rng: random.Random, depth: int = 0) -> None:
    """Apply one random edit somewhere in message: set, clear, add or remove a value, a list element or a map key."""
    fields = list(message.DESCRIPTOR.fields)
    if not fields:
        return
    present = [f for f, _ in message.ListFields()]
    f = rng.choice(present) if present and rng.random() < 0.7 else rng.choice(fields)
    if depth > MAX_DEPTH:
        message.ClearField(f.name)
    elif is_map(f):
        _map(message, f, rng, depth)
    elif f.is_repeated:
        _list(message, f, rng, depth)
    elif f.type == FD.TYPE_MESSAGE:
        op = rng.random()
        if op < 0.15:
            message.ClearField(f.name)
        elif op < 0.25:
            getattr(message, f.name).SetInParent()
        else:
            mutate(getattr(message, f.name), rng, depth + 1)
    elif rng.random() < 0.25:
        message.ClearField(f.name)
    else:
        setattr(message, f.name, scalar(f, rng))


def _fresh(container, rng: random.Random, depth: int) -> Message:
    element = container.add()
    for _ in range(rng.randint(0, 3)):
        mutate(element, rng, depth + 1)
    return element


def _list(message: Message, f: FD, rng: random.Random, depth: int) -> None:
    values, op = getattr(message, f.name), rng.random()
    if op < 0.35 and len(values):
        i = rng.randrange(len(values))
        if f.type == FD.TYPE_MESSAGE:
            mutate(values[i], rng, depth + 1)
        else:
            values[i] = scalar(f, rng)
    elif op < 0.6:
        if f.type == FD.TYPE_MESSAGE:
            _fresh(values, rng, depth)
        else:
            values.append(scalar(f, rng))
    elif op < 0.85 and len(values):
        del values[rng.randrange(len(values))]
    else:
        message.ClearField(f.name)


def _map(message: Message, f: FD, rng: random.Random, depth: int) -> None:
    entries, op = getattr(message, f.name), rng.random()
    keys = list(entries)
    key_field = f.message_type.fields_by_name["key"]
    value_field = f.message_type.fields_by_name["value"]
    if op < 0.2 and keys:
        del entries[rng.choice(keys)]
    elif op < 0.25:
        message.ClearField(f.name)
    else:
        if keys and rng.random() < 0.5:
            key = rng.choice(keys)
        else:
            key = rng.choice(KEYS) if key_field.type == FD.TYPE_STRING else abs(scalar(key_field, rng))
        if value_field.type != FD.TYPE_MESSAGE:
            entries[key] = scalar(value_field, rng)
        elif key in entries and rng.random() < 0.7:
            mutate(entries[key], rng, depth + 1)
        else:
            entries[key].Clear()
            for _ in range(rng.randint(0, 3)):
                mutate(entries[key], rng, depth + 1)
