"""Read the samples of Prometheus exposition text that a caller wants, skipping the rest unparsed.

Every Lab reads Triton's /metrics each second (and each dashboard, CLI and test process has a Lab): parsed whole
with prometheus_client's character-by-character parser, that was about a tenth of the CPU a test run used
(py-spy, 2026-12-02). The lab reads a dozen of Triton's families; this reads a line's metric name first and parses
labels and value only for the names asked for. tests/unit/metrics/test_exposition.py holds it to prometheus_client's
parser on real captures and on the format's corners (escapes, NaN, infinities, timestamps, comments).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator

_NAME = re.compile(r"[ \t]*([a-zA-Z_:][a-zA-Z0-9_:]*)")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"\\]*(?:\\.[^"\\]*)*)"\s*,?')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", "\\": "\\", '"': '"'}


def samples(text: str, keep: Callable[[str], bool]) -> Iterator[tuple[str, dict[str, str], float]]:
    """Yield (sample name, labels, value) for each sample line whose name keep() accepts, in the text's order.

    A line that does not parse raises ValueError, as prometheus_client's parser does.
    """
    for line in text.splitlines():
        m = _NAME.match(line)
        if m is None:  # blank, or a comment (# HELP, # TYPE)
            if line.strip() and not line.lstrip().startswith("#"):
                raise ValueError(f"not a sample line: {line!r}")
            continue
        name = m.group(1)
        if not keep(name):
            continue
        at = m.end()
        labels: dict[str, str] = {}
        if line.startswith("{", at):
            labels, at = _labels(line, at)
        fields = line[at:].split()
        if not fields or len(fields) > 2 or (at < len(line) and line[at] not in " \t"):
            raise ValueError(f"not a sample line: {line!r}")
        yield name, labels, float(fields[0])


def _labels(line: str, brace: int) -> tuple[dict[str, str], int]:
    """Return the labels between the brace at `brace` and its closing one, and where the text after it starts."""
    labels: dict[str, str] = {}
    at = brace + 1
    while True:
        while at < len(line) and line[at] in " \t":
            at += 1
        if line.startswith("}", at):
            return labels, at + 1
        m = _LABEL.match(line, at)
        if m is None:
            raise ValueError(f"cannot read the labels of {line!r}")
        value = m.group(2)
        labels[m.group(1)] = _ESCAPE.sub(_unescape, value) if "\\" in value else value
        at = m.end()


def _unescape(m: re.Match) -> str:
    return _UNESCAPED.get(m.group(1), "\\" + m.group(1))
