"""Carry the knobs a user moved on the served config over to the file's own config, and nothing else."""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from app.config.model_config import ModelConfig
from app.config.proto_compare import field_equal, holds_messages, is_map, same, same_value


def rebase(file: ModelConfig, served: ModelConfig, proposed: ModelConfig) -> ModelConfig:
    """Return file's config with exactly the changes that turn served into proposed (inputs are left alone).

    Triton serves the file auto-completed (instance groups, tensors, defaults); the pages edit what is served.
    Where served and proposed agree the file's value stays, present or absent; where they differ a message on
    both sides is rebased field by field, a list of messages of one length element by element, a map key by key,
    and anything else (scalars, lists of scalars, lists whose length changed, a message added or removed, a oneof
    switch) takes proposed's value.
    """
    out = type(file)()
    out.CopyFrom(file)
    _rebase(out, served, proposed)
    return out


def _rebase(out: Message, served: Message, proposed: Message) -> None:
    """Rebase `out` (a copy of the file's message) in place."""
    for f in out.DESCRIPTOR.fields:
        if field_equal(f, served, proposed):
            continue
        if is_map(f):
            _map(f, out, served, proposed)
        elif f.is_repeated:
            _list(f, out, served, proposed)
        elif f.type == FieldDescriptor.TYPE_MESSAGE and served.HasField(f.name) and proposed.HasField(f.name):
            _rebase(getattr(out, f.name), getattr(served, f.name), getattr(proposed, f.name))
            getattr(out, f.name).SetInParent()
        else:
            _take(f, out, proposed)


def _list(f: FieldDescriptor, out: Message, served: Message, proposed: Message) -> None:
    mine, theirs, wanted = getattr(out, f.name), getattr(served, f.name), getattr(proposed, f.name)
    if f.type != FieldDescriptor.TYPE_MESSAGE or len(theirs) != len(wanted):
        _take(f, out, proposed)
        return
    lined_up = len(mine) == len(theirs)
    result = []
    for i, (s, p) in enumerate(zip(theirs, wanted)):
        if lined_up:  # the file's own element, changed where the user changed it
            element = _copy(mine[i])
            if not same(s, p):
                _rebase(element, s, p)
        elif same(s, p):  # the file lists these elements otherwise (often not at all): keep what serves
            element = _copy(s)
        else:  # from an empty element, so only the sub-fields the user changed are written
            element = type(p)()
            _rebase(element, s, p)
        result.append(element)
    del mine[:]
    for element in result:
        mine.add().CopyFrom(element)


def _map(f: FieldDescriptor, out: Message, served: Message, proposed: Message) -> None:
    mine, theirs, wanted = getattr(out, f.name), getattr(served, f.name), getattr(proposed, f.name)
    messages = holds_messages(f)
    for key in set(theirs) | set(wanted):
        if key not in wanted:
            if key in mine:
                del mine[key]
        elif key in theirs and same_value(theirs[key], wanted[key], messages):
            continue
        elif key in theirs and messages:
            _rebase(mine[key], theirs[key], wanted[key])  # mine[key] starts an empty entry when the file lacks it
        elif messages:
            mine[key].CopyFrom(wanted[key])
        else:
            mine[key] = wanted[key]


def _take(f: FieldDescriptor, out: Message, proposed: Message) -> None:
    """Set out's field to proposed's value, absent where proposed's is absent."""
    out.ClearField(f.name)
    value = getattr(proposed, f.name)
    if f.is_repeated:
        getattr(out, f.name).extend(value)
    elif f.type == FieldDescriptor.TYPE_MESSAGE:
        if proposed.HasField(f.name):
            getattr(out, f.name).CopyFrom(value)
    elif not f.has_presence or proposed.HasField(f.name):
        setattr(out, f.name, value)


def _copy(message: Message) -> Message:
    out = type(message)()
    out.CopyFrom(message)
    return out
