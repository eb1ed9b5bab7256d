"""Every character the scenario verdicts show (the scenario panel, its checks and presenter scripts) is one an
installed font draws (fontconfig's fc-list): Debian's Chromium has no emoji font, so a character no font has is an
empty box on the projector."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from app.paths import ROOT

SHOWN = ["app/ui/panels/scenario_panel.py", "app/scenarios/claims.py", "app/scenarios/scripts.py",
         "app/scenarios/base.py", "app/scenarios/runner.py"]


def test_every_character_the_verdicts_show_is_in_an_installed_font():
    if shutil.which("fc-list") is None:
        pytest.skip("fc-list (fontconfig) is not installed")
    chars = {c for path in SHOWN for c in (ROOT / path).read_text() if ord(c) > 0x7E}
    missing = sorted(c for c in chars if not subprocess.run(["fc-list", f":charset={ord(c):x}"], capture_output=True,
                                                           text=True, check=True).stdout.strip())
    assert not missing, [f"{c!r} U+{ord(c):04X}" for c in missing]
