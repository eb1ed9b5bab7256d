"""Machine texts for a session that may not operate (app/ui/text.py): the words kept, addresses, paths and process
ids dropped."""
from __future__ import annotations

from app.ui.text import redacted


def test_redacted_keeps_the_words_and_drops_addresses_paths_and_process_ids():
    text = ("failed to load /srv/models/m/1/model.py: the server at http://10.0.0.5:8000 (grpc 10.0.0.5:8001, "
            "localhost:8002) refused; process 4242's command line; 12 req/s, 1/2 of /metrics, Triton 2.51.0")
    assert redacted(text) == ("failed to load [path]: the server at [address] (grpc [address], [address]) refused; "
                              "process [id]'s command line; 12 req/s, 1/2 of /metrics, Triton 2.51.0")


def test_a_name_in_a_code_span_shows_as_typed_and_a_backtick_cannot_end_the_span():
    from app.ui.text import code, literal

    assert code("gpu_sim") == "`gpu_sim`"  # no backslash shown inside the span
    assert code("a`b") == literal("a`b") and "\\`" in code("a`b")
    assert code("two\nlines") == "`two lines`"
