"""python -m app.scenarios: a scenario outside the table of load bounds is refused before any server starts."""
from __future__ import annotations

import pytest

from app.cli import scenarios as scenarios_cli
from app.scenarios.base import Phase, Scenario
from app.scenarios.claims import SCENARIOS
from loadgen.spec import LoadSpec


def _scenario(phase: Phase) -> Scenario:
    return Scenario("bad-bounds", "Out of bounds", "instances", "m", "nothing", lambda full: [phase], lambda f: [])


def test_the_scenario_cli_refuses_before_starting_a_server(monkeypatch, capsys):
    bad = _scenario(Phase("long", "", lambda c: c, LoadSpec(model="m", duration_s=None), seconds=1e9))
    monkeypatch.setitem(SCENARIOS, bad.name, bad)
    import app.lab.root  # noqa: PLC0415

    monkeypatch.setattr(app.lab.root.Lab, "create", classmethod(lambda cls, env=None: pytest.fail("a server started")))
    assert scenarios_cli.main(["run", bad.name]) == 2
    assert "error: bad-bounds: phase 'long': seconds = 1000000000.0" in capsys.readouterr().err
