"""Text for values and fields that an edit writes into a user's config.pbtxt, in text_format's own spelling."""
from __future__ import annotations

import io

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

_BOOLS = {"true": "false", "True": "False", "t": "f", "1": "0"}
_BOOLS.update({v: k for k, v in _BOOLS.items()})


def scalar_text(field: FieldDescriptor, value, like: str = "") -> str:
    """Return value as text_format writes it, in the quote or bool spelling of `like` (the token it replaces)."""
    if field.type == FieldDescriptor.TYPE_BOOL and like in _BOOLS:
        truthy = like in ("true", "True", "t", "1")
        return like if truthy == bool(value) else _BOOLS[like]
    out = io.StringIO()
    text_format.PrintFieldValue(field, value, out, as_utf8=True)
    text = out.getvalue()
    if like.startswith("'") and text.startswith('"'):
        text = "'" + text[1:-1] + "'"  # CEscape escapes both quote marks, so the body reads the same in either
    return text


def only(message: Message, field: FieldDescriptor) -> Message:
    """Return a message of the same type holding only message's value of `field`."""
    out = type(message)()
    out.CopyFrom(message)
    for other, _ in out.ListFields():
        if other is not field:
            out.ClearField(other.name)
    return out


def lines(message: Message, indent: str, newline: str = "\n") -> str:
    """Return message in text_format's multi-line style; every line after the first starts with indent."""
    text = text_format.MessageToString(message, as_utf8=True).rstrip("\n")
    return (newline + indent).join(text.split("\n"))


def one_line(message: Message, joiner: str = " ") -> str:
    """Return message on one line, its top-level fields joined by joiner (", " where the file uses commas)."""
    return joiner.join(text_format.MessageToString(only(message, f), as_one_line=True, as_utf8=True)
                       for f, _ in message.ListFields())


def block_text(message: Message, opener: str, multi: bool, indent: str, joiner: str = " ",
               newline: str = "\n") -> str:
    """Return `{ fields }` for a message in a list, on one line or on lines under indent."""
    closer = {"{": "}", "<": ">"}[opener]
    if not multi:
        body = one_line(message, joiner)
        return f"{opener} {body} {closer}" if body else f"{opener} {closer}"
    body = lines(message, indent + "  ", newline)
    inner = f"{newline}{indent}  {body}" if body else ""
    return f"{opener}{inner}{newline}{indent}{closer}"
