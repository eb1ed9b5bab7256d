"""A dashboard process of its own for one test: nothing served before the test's first page (tests/ui/conftest.py's
_streamlit), remote mode on the session server, its state and store in a folder of the test."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from tests.ui.conftest import _streamlit, app_environ


@contextmanager
def fresh_dashboard(triton, base: Path):
    """Start streamlit_app.py against the session server with its state in base/state; yield its URL; end it."""
    env = {**os.environ, **app_environ(triton, base / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.pop("TBL_VIEWER", None)
    served = _streamlit(env, base)
    try:
        yield next(served)
    finally:
        served.close()  # runs _streamlit's finally: the process group is ended
