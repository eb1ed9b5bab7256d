"""Edit a user's config.pbtxt in place: only the values that changed are rewritten, everything else stays as typed.

`patch_text(text, new)` returns text that parses to `new`. Comments, blank lines, field order, list and bracket
style survive wherever the field they sit in survives. What happens to text around an edit:
- a changed scalar or enum: only its value token(s) are rewritten;
- a field that disappears (a message cleared, a scalar back to its default): its text goes, with its trailing
  comment when it had its line to itself; comment lines above it stay (they may speak of more than that field);
- a field that appears: written in text_format's style after the last field of its message, at its siblings'
  indentation (in place of the oneof member it replaces, if any);
- lists (repeated fields) are patched element by element; extra elements are appended after the last one in
  the list's own style, missing ones removed from the end; map entries are matched by key.
"""
from __future__ import annotations

from dataclasses import dataclass, field as dataclass_field

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from app.config.errors import ConfigError, ConfigParseError
from app.config.model_config import ModelConfig, parse_config
from app.config.proto_compare import field_equal, holds_messages, is_map, same, same_value
from app.config.text_render import block_text, lines, one_line, only, scalar_text
from app.config.text_splice import Splicer, SpliceError
from app.config.text_tree import Block, Bracket, Field, Scalar, TreeError, parse_tree

__all__ = ["TextEditError", "patch_text"]


class TextEditError(ConfigError):
    """The text could not be patched to the new config; write the canonical text instead."""


def patch_text(text: str, new: ModelConfig) -> str:
    """Return text edited as little as possible so that it parses to `new`; text itself when it already does."""
    try:
        old = parse_config(text)
    except ConfigParseError as exc:
        raise TextEditError(f"the current config.pbtxt does not parse, so it cannot be patched: {exc}") from exc
    if same(old, new):
        return text
    try:
        tree = parse_tree(text)
        patcher = _Patcher(text)
        patcher.body(tree, old, new)
        out = patcher.result()
    except (TreeError, SpliceError, _Unpatchable) as exc:
        raise TextEditError(f"config.pbtxt could not be patched in place: {exc}") from exc
    try:
        result = parse_config(out)
    except ConfigParseError as exc:
        raise TextEditError(f"patching config.pbtxt in place gave text that does not parse: {exc}") from exc
    if not same(result, new):
        raise TextEditError("patching config.pbtxt in place gave a different config")
    return out


class _Unpatchable(Exception):
    """The tree and the parsed message disagree; the caller falls back to canonical text."""


@dataclass
class _Body:
    """What one message's fields become: nodes removed, fields to insert."""

    block: Block
    removed: set[int] = dataclass_field(default_factory=set)
    inserts: list[tuple[FieldDescriptor, Message]] = dataclass_field(default_factory=list)

    def remove(self, nodes: list[Field]) -> None:
        ids = {id(n) for n in nodes}
        self.removed.update(i for i, n in enumerate(self.block.fields) if id(n) in ids)


class _Patcher(Splicer):
    """Walks the tree and the old and new messages together, splicing only where they differ."""

    # --- one message -------------------------------------------------------------------------------------------

    def body(self, block: Block, old: Message, new: Message) -> None:
        """Patch the fields of one message (the file, or a `{ }` block) from old to new."""
        body, nodes = _Body(block), {}
        descriptor = old.DESCRIPTOR
        for node in block.fields:
            f = descriptor.fields_by_name.get(node.name)
            if f is None:
                raise _Unpatchable(f"{descriptor.full_name} has no field {node.name!r}")
            nodes.setdefault(f.name, []).append(node)
        for f in descriptor.fields:
            if field_equal(f, old, new):
                continue
            mine = nodes.get(f.name, [])
            if is_map(f):
                self.map(body, f, mine, old, new)
            elif f.is_repeated:
                self.repeated(body, f, mine, old, new)
            elif f.type == FieldDescriptor.TYPE_MESSAGE:
                self.message(body, f, mine, old, new)
            else:
                self.scalar(body, f, mine, new)
        self.finish(body)

    def scalar(self, body: _Body, f: FieldDescriptor, mine: list[Field], new: Message) -> None:
        value = getattr(new, f.name)
        present = new.HasField(f.name) if f.has_presence else value != f.default_value
        if not present:
            body.remove(mine)
        elif mine:
            self.replace_scalar(mine[-1].value, f, value)  # earlier occurrences hold the default: the last one counts
        else:
            body.inserts.append((f, only(new, f)))

    def replace_scalar(self, node, f: FieldDescriptor, value) -> None:
        if not isinstance(node, Scalar):
            raise _Unpatchable(f"{f.name} is not written as a scalar")
        self.splice(node.start, node.end, scalar_text(f, value, node.first))

    def message(self, body: _Body, f: FieldDescriptor, mine: list[Field], old: Message, new: Message) -> None:
        if not new.HasField(f.name):
            body.remove(mine)
        elif not old.HasField(f.name):
            body.inserts.append((f, only(new, f)))
        elif len(mine) != 1 or not isinstance(mine[0].value, Block):
            raise _Unpatchable(f"{f.name} is not written as one message")
        else:
            self.body(mine[0].value, getattr(old, f.name), getattr(new, f.name))

    def repeated(self, body: _Body, f: FieldDescriptor, mine: list[Field], old: Message, new: Message) -> None:
        items = [(node, item) for node in mine for item in node.items]
        before, after = getattr(old, f.name), getattr(new, f.name)
        if len(items) != len(before):
            raise _Unpatchable(f"{f.name} has {len(before)} values but {len(items)} in the text")
        is_message = f.type == FieldDescriptor.TYPE_MESSAGE
        for (node, item), a, b in zip(items, before, after):
            if is_message and not same(a, b):
                if not isinstance(item, Block):
                    raise _Unpatchable(f"an element of {f.name} is not a message")
                self.body(item, a, b)
            elif not is_message and not same_value(a, b, False):
                self.replace_scalar(item, f, b)
        if len(after) < len(before):
            self.drop(body, items[len(after):])
        elif len(after) > len(before):
            self.add(body, f, new, mine, items, list(after[len(before):]))

    def map(self, body: _Body, f: FieldDescriptor, mine: list[Field], old: Message, new: Message) -> None:
        items = [(node, item) for node in mine for item in node.items]
        entry_type = getattr(old, f.name).GetEntryClass()
        entries = []
        for _, item in items:
            if not isinstance(item, Block):
                raise _Unpatchable(f"an entry of {f.name} is not a message")
            try:
                entries.append(text_format.Parse(self.text[item.open + 1:item.close], entry_type()))
            except text_format.ParseError as exc:
                raise _Unpatchable(f"an entry of {f.name} does not parse alone: {exc}") from exc
        before, after = getattr(old, f.name), getattr(new, f.name)
        message_values = holds_messages(f)

        def make_entry(key, value) -> Message:
            out = entry_type(key=key)
            if message_values:
                out.value.CopyFrom(value)
            else:
                out.value = value
            return out

        last = {e.key: i for i, e in enumerate(entries)}  # a key written twice: the last one counts
        for key, i in last.items():
            if key in after and not same_value(before[key], after[key], message_values):
                self.body(items[i][1], entries[i], make_entry(key, after[key]))
        self.drop(body, [pair for pair, e in zip(items, entries) if e.key not in after])
        added = sorted(key for key in after if key not in before)
        if added:
            kept = [pair for pair, e in zip(items, entries) if e.key in after]
            if kept:
                self.append(kept[-1], f, [make_entry(key, after[key]) for key in added], body)
            else:
                body.inserts.append((f, only(new, f)))

    # --- lists -------------------------------------------------------------------------------------------------

    def drop(self, body: _Body, gone: list) -> None:
        """Remove list elements: a whole occurrence when all its values go, else the values and their commas."""
        gone_ids = {id(item) for _, item in gone}
        for node in dict.fromkeys(node for node, _ in gone):
            if all(id(item) in gone_ids for item in node.items):
                body.remove([node])
                continue
            kept = [i for i, item in enumerate(node.items) if id(item) not in gone_ids]
            keep_commas = {kept[k + 1] - 1 for k in range(len(kept) - 1)}  # the comma just before each kept value
            spans = [(item.start, item.end) for item in node.items if id(item) in gone_ids]
            spans += [(c, c + 1) for i, c in enumerate(node.value.commas) if i not in keep_commas]
            self.cut_tokens(spans)

    def add(self, body: _Body, f: FieldDescriptor, new: Message, mine: list[Field], items: list, values: list) -> None:
        """Append list elements after the last one, or fill an empty `[ ]`, or write the field anew."""
        if items:
            self.append(items[-1], f, values, body)
            return
        empty = [n for n in mine if isinstance(n.value, Bracket)]
        if not empty:
            body.inserts.append((f, only(new, f)))
            return
        bracket = empty[-1].value
        texts = [self.item_text(f, v, None, "", multi=False) for v in values]
        pad = " " if self.text[bracket.open + 1:bracket.close] else ""
        self.splice(bracket.open + 1, bracket.close, pad + ", ".join(texts) + pad)

    def append(self, last: tuple, f: FieldDescriptor, values: list, body: _Body) -> None:
        """Write values after the list element `last`, in the style of its occurrence."""
        node, item = last
        if isinstance(node.value, Bracket):
            bracket = node.value
            if self.rest_blank(item.end):
                indent = self.indent(item.start) if self.starts_line(item.start) else self.indent(bracket.open) + "  "
                texts = [self.item_text(f, v, item, indent) for v in values]
                self.splice(item.end, item.end, ",")
                at = self.line_end(item.end)
                self.splice(at, at, self.newline + indent + ("," + self.newline + indent).join(texts))
            else:
                self.splice(item.end, item.end, "".join(", " + self.item_text(f, v, item, "") for v in values))
            return
        indent = self.node_indent(node, body.block)
        head = node.name + self.text[node.name_end:node.value.start]
        texts = [head + self.item_text(f, v, item, indent) for v in values]
        self.after(node, body.block, texts)

    def item_text(self, f: FieldDescriptor, value, like, indent: str, multi: bool | None = None) -> str:
        """One list element as text: a scalar, or a `{ }` block shaped like the element `like`."""
        if f.type != FieldDescriptor.TYPE_MESSAGE:
            return scalar_text(f, value, like.first if isinstance(like, Scalar) else "")
        opener, joiner = "{", " "
        if isinstance(like, Block):
            opener, joiner = self.text[like.open], self.joiner(like)
            multi = self.multi(like.open, like.close) if multi is None else multi
        return block_text(value, opener, True if multi is None else multi, indent, joiner, self.newline)

    # --- the end of one message: removals and new fields -------------------------------------------------------

    def finish(self, body: _Body) -> None:
        fields = body.block.fields
        for f, value in list(body.inserts):
            members = {g.name for g in f.containing_oneof.fields} - {f.name} if f.containing_oneof else set()
            twin = next((i for i in sorted(body.removed) if fields[i].name in members), None)
            if twin is not None:  # a oneof switch: the new member takes the old one's place
                body.removed.discard(twin)
                body.inserts.remove((f, value))
                self.replace_node(fields[twin], value, body.block)
        self.cut_fields(body.block, body.removed)
        if body.inserts:
            self.insert(body)

    def replace_node(self, node: Field, value: Message, block: Block) -> None:
        if self.multi(node.start, node.value_end):
            text = lines(value, self.node_indent(node, block), self.newline)
        else:
            text = one_line(value)
        self.splice(node.start, node.value_end, text)

    def insert(self, body: _Body) -> None:
        """Write new fields after the last surviving field, or into the emptied block."""
        block, values = body.block, [value for _, value in body.inserts]
        survivors = [n for i, n in enumerate(block.fields) if i not in body.removed]
        if survivors:
            last = survivors[-1]
            if self.rest_blank(last.end):
                indent = self.node_indent(last, block)
                self.after(last, block, [lines(v, indent, self.newline) for v in values])
            else:
                self.after(last, block, [one_line(v) for v in values])
            return
        indent = self.child_indent(block)
        self.into_empty(block, [lines(v, indent, self.newline) for v in values], [one_line(v) for v in values])
