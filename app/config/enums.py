"""Enum fields written as numbers no value of the enum has (`kind: 99`): found, and named with the valid names.

config.pbtxt's enums are open (proto3), so text_format and json_format accept any number; Triton refuses them
when it loads the model, and `Enum.Name(99)` raises a bare ValueError.
"""
from __future__ import annotations

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from app.config.errors import ConfigValidationError, Problem


def unknown_enum(enum: EnumDescriptor, number: int, field: str) -> Problem:
    """The problem of one out-of-range enum number: the field, the number, the names it could be."""
    names = ", ".join(v.name for v in enum.values)
    return Problem(field, f"is {number}, which is not a {_label(enum)} value; use one of {names}")


def enum_name(enum: EnumDescriptor, number: int, field: str) -> str:
    """Return the name of an enum number; raise ConfigValidationError naming the field when it has none."""
    value = enum.values_by_number.get(number)
    if value is None:
        raise ConfigValidationError.of([unknown_enum(enum, number, field)])
    return value.name


def enum_label(enum: EnumDescriptor, number: int) -> str:
    """Return the name of an enum number, or the number marked as unknown (for text that must not fail)."""
    value = enum.values_by_number.get(number)
    return value.name if value is not None else f"{number} (not a {_label(enum)})"


def enum_problems(message: Message, prefix: str = "") -> list[Problem]:
    """Return a problem for every enum field, at any depth, holding a number its enum does not define."""
    found = []
    for f, value in message.ListFields():
        name = f"{prefix}{f.name}"
        if f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            value_field = f.message_type.fields_by_name["value"]
            for key in sorted(value):
                where = f"{name}[{key!r}]"
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    found += enum_problems(value[key], where + ".")
                elif value_field.type == FieldDescriptor.TYPE_ENUM:
                    found += _check(value_field.enum_type, [value[key]], where, False)
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            elements = value if f.is_repeated else [value]
            for i, element in enumerate(elements):
                found += enum_problems(element, f"{name}[{i}]." if f.is_repeated else f"{name}.")
        elif f.type == FieldDescriptor.TYPE_ENUM:
            found += _check(f.enum_type, value if f.is_repeated else [value], name, f.is_repeated)
    return found


def check_enums(message: Message) -> None:
    """Raise ConfigValidationError listing every out-of-range enum number in message."""
    found = enum_problems(message)
    if found:
        raise ConfigValidationError.of(found)


def _check(enum: EnumDescriptor, numbers, field: str, indexed: bool) -> list[Problem]:
    return [unknown_enum(enum, n, f"{field}[{i}]" if indexed else field)
            for i, n in enumerate(numbers) if n not in enum.values_by_number]


def _label(enum: EnumDescriptor) -> str:
    return enum.full_name.removeprefix(enum.file.package + ".")  # ModelInstanceGroup.Kind
