"""Why a server could not be started: one hierarchy for the embedded, Docker and CLI paths and the pages."""
from __future__ import annotations


class ServerStartError(RuntimeError):
    """The server did not become ready; the message says why (a log tail, or what to install)."""


class ServerBinaryError(ServerStartError):
    """The wheel's tritonserver or its Python backend cannot run as installed; nothing was started."""
