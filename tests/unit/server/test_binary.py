"""The numpy the wheel server's Python backend stub can serve with, checked before anything starts
(tests/contract/server/test_binary.py runs the server CLI on a numpy 2)."""
from __future__ import annotations

import numpy

from app.server.binary import STUB_NUMPY_MAJOR, numpy_problem
from app.server.start_errors import ServerBinaryError, ServerStartError


def test_the_pinned_numpy_is_accepted():
    assert numpy.__version__.startswith(f"{STUB_NUMPY_MAJOR}."), numpy.__version__
    assert numpy_problem(numpy.__version__) is None


def test_numpy_2_or_none_is_refused_with_the_fix():
    for version in ("2.0.0", "2.1.3", "3.0.0rc1"):
        problem = numpy_problem(version)
        assert problem and f"numpy {version}" in problem and 'pip install "numpy<2"' in problem, problem
        assert "output tensor shape does not match" in problem  # what the user would otherwise see per request
    assert "numpy is not installed" in numpy_problem(None)


def test_a_binary_error_is_shown_where_start_errors_are():
    assert issubclass(ServerBinaryError, ServerStartError)  # the pages and the CLI catch ServerStartError
