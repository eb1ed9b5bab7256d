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
    def __init__(self) -> None:
        self.t = 0.0

    def wait_until(self, t, cancel=None) -> None:
        self.t = max(self.t, t)

    def edge(self):
        return SimpleNamespace(t=self.t, stats=None)

    def discard_before(self, t) -> None:
        pass

    def window(self, start, end):
        return SimpleNamespace(figures=lambda model: SimpleNamespace(row=lambda cls: SimpleNamespace(p99_ms=1.0)))

    def close(self) -> None:
        pass


class _Lab:
    """What the probe asks of a lab: it records the traffic sent and answers with the calibration given."""

    def __init__(self, calibration: Calibration) -> None:
        self.sent, self.learnt, self.noted, self._calibration = [], 0, [], calibration

    def traffic(self):
        return SimpleNamespace(running=False, spec=None, started_at=None)

    def served_config(self, model):
        return parse_config(CONFIG)

    def stop_traffic(self, why) -> None:
        pass

    def start_traffic(self, spec) -> None:
        self.sent.append(spec)

    def meter(self, model, slas_s=None):
        return _Meter()

    def learn_edges(self, model, start, end, figures) -> bool:
        self.learnt += 1
        self.noted.append((start.t, end.t, figures.row("all").p99_ms))
        return True

    def calibration(self, model):
        return self._calibration


def _window(client_rps: float, expected_rps: float) -> Window:
    return Window(1, ((8, 100, 100 * 1_000_000),), 800, seconds=1.0, client_rps=client_rps, outside_us=500.0,
                  expected_rps=expected_rps)


def test_a_server_bound_model_gets_closed_loops_only():
    lab = _Lab(Calibration((_window(7000.0, 7200.0),)))
    probe_module.probe(lab, "m", level_s=0.0)
    assert [(s.mode, s.concurrency) for s in lab.sent] == [(Mode.CLOSED, 1), (Mode.CLOSED, 4), (Mode.CLOSED, 16)], \
        lab.sent
    assert lab.learnt == 3


def test_a_host_bound_model_gets_its_top_level_again_and_two_open_loops_at_shares_of_what_its_host_allowed():
    cal = Calibration((_window(3000.0, 7200.0),))  # its clients got 3,000 answers/s of the 7,200 its executions allow
    assert cal.host_ceiling is not None
    lab = _Lab(cal)
    probe_module.probe(lab, "m", level_s=0.2)
    assert [s.mode for s in lab.sent] == [Mode.CLOSED] * 4 + [Mode.OPEN] * 2, lab.sent
    assert [s.concurrency for s in lab.sent[:4]] == [1, 4, 16, 16], lab.sent  # the top level again, for longer
    start, end, _ = lab.noted[3]
    assert abs(end - start - probe_module.OPEN_LEVEL * 0.2) < 1e-6, lab.noted
    assert [s.rate for s in lab.sent[4:]] == [600.0, 1500.0] and lab.learnt == 6, (lab.sent[4:], lab.learnt)
    assert lab.learnt <= KEPT, "the twin's book would drop the probe's first window (its batches of one)"
    # each open level: a window of OPEN_LEVEL closed levels, after a warm-up of its own
    start, end, _ = lab.noted[-1]
    assert abs(end - start - probe_module.OPEN_LEVEL * 0.2) < 1e-6, lab.noted
