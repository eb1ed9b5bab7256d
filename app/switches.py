"""Switches the lab reads from the environment: one rule for what turns one on."""
from __future__ import annotations

import os
from collections.abc import Mapping

ON = ("1", "true", "yes", "on")  # any case, blanks around ignored; anything else (or unset) is off


def switched_on(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Return whether the environment variable `name` turns its switch on."""
    return (os.environ if environ is None else environ).get(name, "").strip().lower() in ON
