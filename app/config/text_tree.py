"""A concrete syntax tree of protobuf text format with character spans, so an edit can leave the rest alone."""
from __future__ import annotations

import re
from dataclasses import dataclass

# The tokens of google.protobuf.text_format.Tokenizer, matched over the whole text instead of line by line.
_SKIP = re.compile(r"(\s|#.*$)+", re.MULTILINE)
_TOKEN = re.compile("|".join([
    r"[a-zA-Z_][0-9a-zA-Z_+-]*",
    r"([0-9+-]|(\.[0-9]))[0-9a-zA-Z_.+-]*",
    *(rf"{q}[^{q}\n\\]*((\\.)+[^{q}\n\\]*)*({q}|\\?$)" for q in "'\""),
]), re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CLOSER = {"{": "}", "<": ">"}
_PUNCTUATION = frozenset("{}<>[]:,;")


class TreeError(ValueError):
    """The text holds syntax this tree does not model (extensions, Any URLs) or is not text format."""


@dataclass(frozen=True)
class Token:
    """One token and where it lies in the text."""

    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class Scalar:
    """A scalar value: one token, or adjacent string tokens that concatenate."""

    start: int
    end: int
    first: str  # the first token as written: its quote or spelling is kept when the value is rewritten


@dataclass(frozen=True)
class _Enclosed:
    """A value between an opening and a closing bracket: its span runs from the one through the other."""

    open: int
    close: int

    @property
    def start(self) -> int:
        return self.open

    @property
    def end(self) -> int:
        return self.close + 1


@dataclass(frozen=True)
class Block(_Enclosed):
    """A message: `{ fields }` or `< fields >`; open and close are the bracket positions (-1, len for the file)."""

    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Bracket(_Enclosed):
    """A `[ a, b ]` list of scalars or messages, with the positions of its commas."""

    items: tuple[Scalar | Block, ...]
    commas: tuple[int, ...]


@dataclass(frozen=True)
class Field:
    """One `name: value` occurrence; sep is the position of a `,` or `;` after it."""

    name: str
    start: int
    name_end: int
    value: Scalar | Block | Bracket
    sep: int | None

    @property
    def value_end(self) -> int:
        return self.value.end

    @property
    def end(self) -> int:
        return self.sep + 1 if self.sep is not None else self.value.end

    @property
    def items(self) -> tuple[Scalar | Block, ...]:
        """The values this occurrence adds to its field, in order."""
        return self.value.items if isinstance(self.value, Bracket) else (self.value,)


def tokenize(text: str) -> list[Token]:
    """Split text into text_format's tokens, skipping whitespace and `#` comments."""
    tokens, pos = [], 0
    while True:
        skip = _SKIP.match(text, pos)
        if skip:
            pos = skip.end()
        if pos >= len(text):
            return tokens
        match = _TOKEN.match(text, pos)
        tokens.append(Token(match.group(0) if match else text[pos], pos))
        pos = tokens[-1].end


def parse_tree(text: str) -> Block:
    """Return the file as a Block whose open is -1 and close is len(text); raise TreeError on other syntax."""
    parser = _Parser(tokenize(text))
    fields = parser.fields(closer=None)
    return Block(-1, len(text), fields)


class _Parser:
    """Recursive descent over tokens, the grammar of text_format without descriptors."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.at].text if self.at < len(self.tokens) else None

    def take(self) -> Token:
        if self.at >= len(self.tokens):
            raise TreeError("the text ends inside a value")
        self.at += 1
        return self.tokens[self.at - 1]

    def expect(self, text: str) -> Token:
        token = self.take()
        if token.text != text:
            raise TreeError(f"expected {text!r} at offset {token.start}, found {token.text!r}")
        return token

    def fields(self, closer: str | None) -> tuple[Field, ...]:
        out = []
        while self.peek() != closer:
            if self.peek() is None:
                raise TreeError(f"expected {closer!r} before the end of the text")
            out.append(self.field())
        return tuple(out)

    def field(self) -> Field:
        name = self.take()
        if not _NAME.fullmatch(name.text):
            raise TreeError(f"expected a field name at offset {name.start}, found {name.text!r}")
        if self.peek() == ":":
            self.take()
        value = self.bracket() if self.peek() == "[" else self.item()
        sep = self.take().start if self.peek() in (",", ";") else None
        return Field(name.text, name.start, name.end, value, sep)

    def item(self) -> Scalar | Block:
        return self.block() if self.peek() in _CLOSER else self.scalar()

    def block(self) -> Block:
        opener = self.take()
        fields = self.fields(_CLOSER[opener.text])
        return Block(opener.start, self.expect(_CLOSER[opener.text]).start, fields)

    def bracket(self) -> Bracket:
        opener, items, commas = self.take(), [], []
        while self.peek() != "]":
            if items:
                commas.append(self.expect(",").start)
            items.append(self.item())
        return Bracket(opener.start, self.take().start, tuple(items), tuple(commas))

    def scalar(self) -> Scalar:
        token = self.take()
        if token.text in _PUNCTUATION:
            raise TreeError(f"expected a value at offset {token.start}, found {token.text!r}")
        end = token.end
        if token.text[0] in "'\"":
            while (self.peek() or " ")[0] in "'\"":
                end = self.take().end
        return Scalar(token.start, end, token.text)
