"""The lab's own decoupled model, token_sim (LENGTH=n -> tokens 0..n-1), driven over the gRPC stream path."""
from __future__ import annotations

import json
from collections import Counter

from loadgen.outcome import Outcome
from loadgen.spec import LoadSpec, Mode, TrafficClass
from tests.loadgen.fanout_kit import run

LENGTH = 5
GENERATIONS = 16


def test_token_sim_streams_every_token_over_the_stream_path(triton, tmp_path):
    data = tmp_path / "length.json"
    data.write_text(json.dumps({"data": [{"LENGTH": [LENGTH]}]}))
    for mode in (Mode.CLOSED, Mode.OPEN):
        # a count, not a duration: beside a busy first pass 1.5 s of closed loop finished 10 generations (ci248)
        spec = LoadSpec(mode=mode, rate=30.0, concurrency=4, model="token_sim", duration_s=None,
                        max_requests=GENERATIONS, classes=(TrafficClass("gen", data=str(data)),), seed=5)
        records, summary = run(triton.endpoint, spec)
        outcomes = Counter((r.outcome.value, r.responses, r.detail) for r in records)
        assert len(records) == GENERATIONS and set(outcomes) == {("ok", LENGTH, "")}, (mode, outcomes)
        row = summary["all"]
        assert row["responses"] == LENGTH * row["ok"] and row["gap_n"] == row["ok"], row
        assert all(r.outcome is Outcome.OK and r.first_s <= r.latency_s for r in records)
