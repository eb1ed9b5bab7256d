"""python -m app.experiments autopilot: bad arguments are refused in words, exit 2, before any server starts."""
from __future__ import annotations

import pytest

from app.cli.studies import main


@pytest.fixture
def no_server(monkeypatch):
    """Fail the test if the CLI starts a lab: a refusal must come first."""
    def refuse(*_a, **_k):
        raise AssertionError("a server was started before the arguments were checked")
    monkeypatch.setattr("app.lab.root.Lab.create", refuse)


@pytest.mark.parametrize("argv, words", [
    (["--sla-ms", "50", "--rate", "100", "--min-instances", "3", "--max-instances", "2"],
     "min_instances is 3, above max_instances 2"),
    (["--sla-ms", "0", "--rate", "100"], "sla_p99_ms is 0"),
    (["--sla-ms", "50", "--trace", "no_such_trace"], "rate_trace 'no_such_trace'"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "0.5"], "plays 2 h"),
    (["--sla-ms", "50", "--rate", "100", "--report", "x.html"], "--report is for studies"),
    (["--sla-ms", "50", "--rate", "100", "--dwell-s", "1"], "dwell_s is 1 s"),
    (["--sla-ms", "50", "--rate", "100", "--forecast", "same"], "--forecast needs --trace"),
    (["--sla-ms", "50", "--rate", "100", "--instance-rps", "300"], "give --forecast too"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "nope"], "rate_trace 'nope'"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "same", "--lead-s", "0"],
     "lead_s 0"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "diurnal",
      "--instance-rps", "-5"], "instance_rps -5"),
])
def test_bad_arguments_are_refused_in_words_before_any_server(argv, words, capsys, no_server):
    assert main(["autopilot", "--model", "gpu_sim", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err, err
