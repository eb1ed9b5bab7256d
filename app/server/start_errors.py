"""Why a server could not be started: one hierarchy for the embedded, Docker and CLI paths and the pages."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


class ServerStartError(RuntimeError):
    """The server did not become ready; the message says why (a log tail, or what to install)."""


class ServerBinaryError(ServerStartError):
    """The wheel's tritonserver or its Python backend cannot run as installed; nothing was started."""


# Triton's Python backend now and then aborts while it starts a model's stubs on a starved host ("terminate called
# after throwing an instance of 'boost::interprocess::lock_exception'": triton-inference-server/server #5949, #8882):
# 3 of ~60 runs of our suite on 2 cores, in an embedded-style and a container start. The config is not at fault,
# and the same start again serves: a start that ends so is made once more, and said so in the log.
PYTHON_BACKEND_ABORT = "boost::interprocess::lock_exception"


def start_with_one_more_try(start: Callable[[], T], what: str) -> T:
    """Return start(); once more when it failed with the Python backend's abort (PYTHON_BACKEND_ABORT in its reason),
    raising the second failure of any kind as it is."""
    try:
        return start()
    except ServerStartError as exc:
        if PYTHON_BACKEND_ABORT not in str(exc):
            raise
        log.warning("%s: Triton's Python backend aborted while loading the models (%s, a known Triton fault on a "
                    "busy host); starting it once more", what, PYTHON_BACKEND_ABORT)
    return start()
