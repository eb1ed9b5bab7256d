"""Text people typed (labels of runs, sweeps and comparisons) shown as typed inside Streamlit's Markdown.

Streamlit renders alerts, captions, subheaders, progress texts and expander labels as Markdown with
LaTeX between `$` and directives such as `:red[...]`: a label like "cost $5 vs $7" or "a:b" would be
set as formula or lose its tail. Text the lab writes itself may use Markdown; text from people goes
through literal() first (only at the screen: reports and stored labels keep it as typed).
"""
from __future__ import annotations

import re

from app.config.errors import clean

_MARKS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:=])")


def literal(text: object) -> str:
    """Return text that Streamlit's Markdown shows as typed: every Markdown, LaTeX and directive mark escaped,
    control characters dropped, line breaks made spaces (a label is one line)."""
    return _MARKS.sub(r"\\\1", " ".join(clean(str(text)).splitlines()))
