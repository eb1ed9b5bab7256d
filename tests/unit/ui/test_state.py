"""The process's one Lab as the pages get it (app/ui/state.py): Streamlit's cache clear, which any session may send,
never forks it (issue 29)."""
from __future__ import annotations

from streamlit.runtime import caching

from app.lab import owner
from app.ui.state import get_lab


def test_a_cache_clear_keeps_the_one_lab(on_fake):
    assert get_lab() is on_fake
    caching.cache_data.clear()  # what Streamlit's clear-cache message does (AppSession._handle_clear_cache_request)
    caching.cache_resource.clear()
    assert get_lab() is on_fake and owner.current() is on_fake
