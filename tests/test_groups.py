"""The suite's worker groups (tests/conftest.py GROUPS) name every module that shares what they group."""
from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import GROUPS

TESTS = Path(__file__).parent
HAND_STARTED = re.compile(r"\b(none_server|poll_server|explicit_server)\b")


def test_every_module_on_a_hand_started_server_is_in_its_group():
    users = {f"tests/{p.relative_to(TESTS).as_posix()}" for p in TESTS.rglob("test_*.py")
             if p != Path(__file__) and HAND_STARTED.search(p.read_text())}
    assert users, "no module uses the hand-started servers: the group is stale"
    assert users == set(GROUPS["hand-started"]), (sorted(users - set(GROUPS["hand-started"])),
                                                  sorted(set(GROUPS["hand-started"]) - users))
