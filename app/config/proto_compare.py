"""Field-by-field equality of protobuf messages, the one rule the text patcher and the rebase share."""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


def is_map(f: FieldDescriptor) -> bool:
    """Whether the field is a map (a repeated message of key/value entries)."""
    return f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def holds_messages(f: FieldDescriptor) -> bool:
    """Whether the field's values are messages (for a map: its entries' values)."""
    if is_map(f):
        return f.message_type.fields_by_name["value"].type == FieldDescriptor.TYPE_MESSAGE
    return f.type == FieldDescriptor.TYPE_MESSAGE


def same(a: Message, b: Message) -> bool:
    """Protobuf equality that also holds for NaN floats (equal bytes)."""
    return a == b or a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


def same_value(a, b, messages: bool) -> bool:
    """Equality of two values of one field: messages by same(), scalars by == (NaN equals NaN)."""
    return same(a, b) if messages else a == b or (a != a and b != b)


def field_equal(f: FieldDescriptor, a: Message, b: Message) -> bool:
    """Whether two messages of one type agree on field f: presence, value, every element, every map entry."""
    x, y, messages = getattr(a, f.name), getattr(b, f.name), holds_messages(f)
    if is_map(f):
        return set(x) == set(y) and all(same_value(x[k], y[k], messages) for k in x)
    if f.is_repeated:
        return len(x) == len(y) and all(same_value(m, n, messages) for m, n in zip(x, y))
    if (messages or f.has_presence) and a.HasField(f.name) != b.HasField(f.name):
        return False
    return same_value(x, y, messages)
