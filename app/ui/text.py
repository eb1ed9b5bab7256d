"""Text people typed (labels of runs, sweeps and comparisons) shown as typed inside Streamlit's Markdown, and
machine texts shown to a read-only session without the addresses, paths and process ids inside them.

Streamlit renders alerts, captions, subheaders, progress texts and expander labels as Markdown with
LaTeX between `$` and directives such as `:red[...]`: a label like "cost $5 vs $7" or "a:b" would be
set as formula or lose its tail. Text the lab writes itself may use Markdown; text from people goes
through literal() first (only at the screen: reports and stored labels keep it as typed).
"""
from __future__ import annotations

import re

from app.config.errors import clean

_MARKS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:=])")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s`'\"<>)\]]+")
_ADDRESS = re.compile(r"(?<![\w.])(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9A-Fa-f:]+\])(?::\d+)?(?![\w.])")
# an absolute path of two parts or more (one part, like /metrics, is an API route); not inside a word (req/s, 1/2)
_PATH = re.compile(r"(?<![\w.:/\\-])~?(?:/[\w.@+-]+){2,}/?")
_PROCESS = re.compile(r"\b(process(?:\s+id)?|PID|pid)\s*:?\s*\d+")


def literal(text: object) -> str:
    """Return text that Streamlit's Markdown shows as typed: every Markdown, LaTeX and directive mark escaped,
    control characters dropped, line breaks made spaces (a label is one line)."""
    return _MARKS.sub(r"\\\1", " ".join(clean(str(text)).splitlines()))


def code(text: object) -> str:
    """Return a name (a model's, a file's) as a Markdown code span, which shows it as typed without escapes (an
    escaped name inside backticks showed its backslashes: `gpu\\_sim`); literal() where a backtick would end it."""
    shown = " ".join(clean(str(text)).splitlines())
    return f"`{shown}`" if shown and "`" not in shown else literal(shown)


def redacted(text: object) -> str:
    """Return a machine text (an error, Triton's reason, how the lab found something) for a read-only session:
    URLs, host:port addresses, absolute paths and process ids replaced by what they are."""
    out = _URL.sub("[address]", clean(str(text)))
    out = _ADDRESS.sub("[address]", out)
    out = _PATH.sub("[path]", out)
    return _PROCESS.sub(lambda m: f"{m.group(1)} [id]", out)
