"""The probe's levels: closed loops at a few concurrencies, and an open loop more only where the host is the limit."""
from __future__ import annotations

from types import SimpleNamespace

from app.config.model_config import parse_config
from app.experiments import probe as probe_module
from app.twin.book import KEPT
from app.twin.calibration import Calibration, Window
from loadgen.spec import Mode

CONFIG = """name: "m"
max_batch_size: 8
input { name: "INPUT" data_type: TYPE_FP32 dims: 4 }
output { name: "OUTPUT" data_type: TYPE_FP32 dims: 4 }
dynamic_batching { max_queue_delay_microseconds: 100 }
"""


class _Meter:
    """Edges at the times waited for; each window's clients' p99 the next of p99s (1.0 once they run out)."""

    def __init__(self, p99s=()) -> None:
        self.t, self.p99s, self.cut, self.calls = 0.0, list(p99s), [], []

    def wait_until(self, t, cancel=None) -> None:
        self.t = max(self.t, t)

    def edge(self):
        self.calls.append("edge")
        return SimpleNamespace(t=self.t, stats=None)

    def discard_before(self, t) -> None:
        pass

    def window(self, start, end):
        p99 = self.p99s.pop(0) if self.p99s else 1.0
        self.cut.append((start.t, end.t, p99))
        self.calls.append("window")
        return SimpleNamespace(figures=lambda model: SimpleNamespace(row=lambda cls: SimpleNamespace(p99_ms=p99)))

    def close(self) -> None:
        pass


class _Lab:
    """What the probe asks of a lab: it records the traffic sent and answers with the calibration given."""

    def __init__(self, calibration: Calibration, p99s=()) -> None:
        self.sent, self.learnt, self.noted, self._calibration = [], 0, [], calibration
        self.p99s = p99s

    def traffic(self):
        return SimpleNamespace(running=False, spec=None, started_at=None)

    def served_config(self, model):
        return parse_config(CONFIG)

    def stop_traffic(self, why) -> None:
        pass

    def start_traffic(self, spec) -> None:
        self.sent.append(spec)

    def meter(self, model, slas_s=None):
        self.meters = getattr(self, "meters", []) + [_Meter(self.p99s)]
        return self.meters[-1]

    def learn_edges(self, model, start, end, figures, p99_parts_ms=()) -> bool:
        self.learnt += 1
        self.noted.append((start.t, end.t, figures.row("all").p99_ms))
        self.parts = getattr(self, "parts", []) + [p99_parts_ms]
        return True

    def calibration(self, model):
        return self._calibration


def _window(client_rps: float, expected_rps: float) -> Window:
    return Window(1, ((8, 100, 100 * 1_000_000),), 800, seconds=1.0, client_rps=client_rps, outside_us=500.0,
                  expected_rps=expected_rps)


def test_a_server_bound_model_gets_closed_loops_only():
    lab = _Lab(Calibration((_window(7000.0, 7200.0),)))
    probe_module.probe(lab, "m", level_s=0.0)
    # one alone, twice the largest batch, and two between, so the sizes between are measured, not fitted
    assert [(s.mode, s.concurrency) for s in lab.sent] == [(Mode.CLOSED, c) for c in (1, 4, 8, 16)], lab.sent
    assert lab.learnt == 4


def test_a_host_bound_model_gets_its_top_level_again_and_two_open_loops_at_shares_of_what_its_host_allowed():
    cal = Calibration((_window(3000.0, 7200.0),))  # its clients got 3,000 answers/s of the 7,200 its executions allow
    assert cal.host_ceiling is not None
    # the closed levels' p99s, then each open level's three parts: the second open level's first part caught a stall
    lab = _Lab(cal, p99s=[1.0, 2.0, 2.5, 3.0, 3.0] + [4.0, 3.0, 5.0] + [40.0, 6.0, 7.0])
    probe_module.probe(lab, "m", level_s=0.2)
    assert [s.mode for s in lab.sent] == [Mode.CLOSED] * 5 + [Mode.OPEN] * 2, lab.sent
    assert [s.concurrency for s in lab.sent[:5]] == [1, 4, 8, 16, 16], lab.sent  # the top level again, for longer
    start, end, _ = lab.noted[4]
    assert abs(end - start - probe_module.AGAIN_LEVEL * 0.2) < 1e-6, lab.noted
    assert [s.rate for s in lab.sent[5:]] == [600.0, 1500.0] and lab.learnt == 7, (lab.sent[5:], lab.learnt)
    assert lab.learnt <= KEPT, "the twin's book would drop the probe's first window (its batches of one)"
    # each open level: OPEN_PARTS windows of OPEN_LEVEL closed levels after a warm-up of its own, the median noted
    assert probe_module.OPEN_PARTS == 3
    part = probe_module.OPEN_LEVEL * 0.2
    (s1, e1, p1), (s2, e2, p2) = lab.noted[-2:]
    assert p1 == 4.0 and p2 == 7.0, lab.noted  # not the stall's 40 ms, nor the luckiest part
    assert abs(e1 - s1 - part) < 1e-6 and abs(e2 - s2 - part) < 1e-6, lab.noted
    # the noted part is the one whose p99 it is: the first open level's first part, the second's last
    cut = lab.meters[0].cut
    assert len(cut) == 5 + 2 * 3 and lab.noted[-2] == cut[5] and lab.noted[-1] == cut[-1], (cut, lab.noted)
    # every part's p99 goes with the one noted (how far the tail moved between them); a closed level has one window
    assert lab.parts == [()] * 5 + [(4.0, 3.0, 5.0), (40.0, 6.0, 7.0)], lab.parts
    # a level's parts are cut into figures only after its last edge: cutting takes the CPU the next part would measure
    level = ["edge"] * (probe_module.OPEN_PARTS + 1) + ["window"] * probe_module.OPEN_PARTS
    assert lab.meters[0].calls[-2 * len(level):] == level * 2, lab.meters[0].calls


def test_the_median_part_is_the_middle_p99_and_a_part_without_one_counts_highest():
    def part(name, p99):
        return (name, name, SimpleNamespace(row=lambda cls: SimpleNamespace(p99_ms=p99)))
    assert probe_module.median_part([part("a", 9.0), part("b", 2.0), part("c", 5.0)])[0] == "c"
    assert probe_module.median_part([part("a", None), part("b", 2.0), part("c", 5.0)])[0] == "c"
    assert probe_module.median_part([part("a", 3.0)])[0] == "a"
    assert probe_module.median_part([part("a", 3.0), part("b", 1.0)])[0] == "b"  # the lower middle of two
