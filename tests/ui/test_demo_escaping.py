"""/demo shows what the operator typed as typed: a marker's text is never Markdown, a link or an image."""
from __future__ import annotations

import re

from markdown_it import MarkdownIt

from tests.ui.apptest import open_page, shown

HOSTILE = "[x](http://example.invalid) <img src=http://example.invalid/a.png> **b** $x$ :red[y]"


def test_a_markers_text_reaches_the_demo_as_typed(lab):
    model = lab.load.spec.model if lab.load.spec is not None else "gpu_sim"  # the model /demo follows
    marker = lab.markers.add(model, "note", HOSTILE)
    at = open_page("lab_pages/demo.py")
    latest = [m.value for m in at.markdown if m.value.startswith(f"**Latest: #{marker.id} ")]
    assert latest, [m.value for m in at.markdown]
    source = latest[0]
    print(f"Markdown source: {source!r}")
    assert HOSTILE in shown(source)  # every mark escaped: what Markdown shows is the text as typed
    for raw in ("[x](", "<img", "**b**", "$x$", ":red["):  # each mark of it preceded by a backslash
        assert not re.search(r"(?<!\\)" + re.escape(raw), source), f"{raw!r} reaches Markdown unescaped: {source!r}"
    html = MarkdownIt("commonmark").render(source)  # CommonMark, HTML allowed: what a Markdown renderer makes of it
    assert "<a " not in html and "<img" not in html and "<strong>b</strong>" not in html, html
    caption = " ".join(c.value for c in at.caption)
    assert "127.0.0.1:" not in caption and "http://" not in caption, caption  # no internal address for an audience
