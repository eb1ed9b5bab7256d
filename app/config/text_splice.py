"""Splices over one text: cuts and insertions at character positions, placed the way its lines are laid out."""
from __future__ import annotations

import re

from app.config.text_tree import Block, Field

_REST = re.compile(r"[ \t\r\f\v]*(#[^\n]*)?")
_HSPACE = " \t"


class SpliceError(Exception):
    """Two splices overlap: the edit cannot be made on this text."""


class Splicer:
    """Collects non-overlapping splices (start, end, replacement) over the original text, then applies them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self._splices: list[tuple[int, int, int, str]] = []

    def splice(self, start: int, end: int, replacement: str) -> None:
        """Replace text[start:end]; insertions at one position keep the order they were made in."""
        self._splices.append((start, end, len(self._splices), replacement))

    def result(self) -> str:
        """The text with every splice made; SpliceError when two of them overlap."""
        out, pos = [], 0
        for start, end, _, replacement in sorted(self._splices):
            if start < pos:
                raise SpliceError(f"two edits overlap at offset {start}")
            out += [self.text[pos:start], replacement]
            pos = end
        return "".join(out) + self.text[pos:]

    # --- where things are ----------------------------------------------------------------------------------------

    def line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def line_end(self, pos: int) -> int:
        """The end of pos's line, before its \\n (or \\r\\n)."""
        end = self.text.find("\n", pos)
        end = len(self.text) if end < 0 else end
        return end - 1 if end > pos and self.text[end - 1] == "\r" else end

    def starts_line(self, pos: int) -> bool:
        return not self.text[self.line_start(pos):pos].strip()

    def rest_blank(self, pos: int) -> bool:
        """Only spaces and maybe a comment between pos and the end of its line."""
        return _REST.match(self.text, pos).end() >= self.line_end(pos)

    def multi(self, start: int, end: int) -> bool:
        return "\n" in self.text[start:end]

    def indent(self, pos: int) -> str:
        """The whitespace that starts pos's line."""
        start = self.line_start(pos)
        head = self.text[start:pos]
        return head[:len(head) - len(head.lstrip())]

    def child_indent(self, block: Block) -> str:
        """The indentation of a block's fields: its last field that starts a line, else the block's + 2 spaces."""
        starters = [n for n in block.fields if self.starts_line(n.start)]
        if starters:
            return self.indent(starters[-1].start)
        return "" if block.open < 0 else self.indent(block.open) + "  "

    def node_indent(self, node: Field, block: Block) -> str:
        return self.indent(node.start) if self.starts_line(node.start) else self.child_indent(block)

    def joiner(self, block: Block) -> str:
        """What separates fields written on one line in this block: `, ` where the user wrote commas."""
        seps = {self.text[n.sep] for n in block.fields if n.sep is not None}
        return ", " if "," in seps else "; " if ";" in seps else " "

    # --- cutting and inserting -----------------------------------------------------------------------------------

    def cut(self, start: int, end: int) -> None:
        """Remove [start, end) with the whitespace that would dangle; whole lines (and their trailing comment)
        when it had them to itself."""
        text, ls, le = self.text, self.line_start(start), self.line_end(end)
        before_blank = not text[ls:start].strip()
        if before_blank and self.rest_blank(end):
            newline = text.find("\n", end)
            self.splice(ls, len(text) if newline < 0 else newline + 1, "")
        elif self.rest_blank(end):
            while start > ls and text[start - 1] in _HSPACE:
                start -= 1
            self.splice(start, end, "")
        else:
            if before_blank or text[start - 1] in _HSPACE + "[{<":
                while end < le and text[end] in _HSPACE:
                    end += 1
            self.splice(start, end, "")

    def cut_tokens(self, spans: list[tuple[int, int]]) -> None:
        """Remove tokens, merging neighbours separated by whitespace only (comments between them stay)."""
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and not self.text[merged[-1][1]:start].strip():
                merged[-1][1] = end
            else:
                merged.append([start, end])
        for start, end in merged:
            self.cut(start, end)

    def cut_fields(self, block: Block, gone: set[int]) -> None:
        """Remove the fields at these indexes of block; neighbours go together unless a comment sits between."""
        fields, runs = block.fields, []
        for i in sorted(gone):
            if runs and runs[-1][-1] == i - 1 and not self.text[fields[i - 1].end:fields[i].start].strip():
                runs[-1].append(i)
            else:
                runs.append([i])
        for run in runs:
            first, last = fields[run[0]], fields[run[-1]]
            start, prev = first.start, fields[run[0] - 1] if run[0] > 0 else None
            tail = run[-1] == len(fields) - 1
            if (tail and last.sep is None and prev is not None and prev.sep is not None
                    and not self.text[prev.sep + 1:start].strip() and "\n" not in self.text[prev.sep:start]):
                start = prev.sep  # `a: 1, b: 2` without b is `a: 1`, not `a: 1,`
            self.cut(start, last.end)

    def after(self, node: Field, block: Block, texts: list[str]) -> None:
        """Insert texts (whole fields) after node: on lines of their own, or inline where node shares its line."""
        if self.rest_blank(node.end):
            indent, at = self.node_indent(node, block), self.line_end(node.end)
            self.splice(at, at, "".join(self.newline + indent + t for t in texts))
        else:
            prefix = self.text[node.sep] + " " if node.sep is not None else self.joiner(block)
            self.splice(node.value_end, node.value_end, "".join(prefix + t for t in texts))

    def into_empty(self, block: Block, multi_texts: list[str], one_line_texts: list[str]) -> None:
        """Insert fields into a block none of whose fields survive: the file's end, the line before `}`, or inline."""
        if block.open < 0:
            lead = "" if not self.text or self.text.endswith("\n") else self.newline
            self.splice(len(self.text), len(self.text), lead + "".join(t + self.newline for t in multi_texts))
        elif self.multi(block.open, block.close) and self.starts_line(block.close):
            at, indent = self.line_start(block.close), self.child_indent(block)
            self.splice(at, at, "".join(indent + t + self.newline for t in multi_texts))
        else:
            pad = "" if self.text[block.close - 1] in _HSPACE else " "
            self.splice(block.close, block.close, pad + " ".join(one_line_texts) + " ")
