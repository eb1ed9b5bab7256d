"""Run a scenario on the lab's server: phase by phase, measured like A/B trials, judged, stored as a study."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.config.errors import ConfigError
from app.config.model_config import format_config, parse_config
from app.experiments.driving import Cancelled, Interrupted, Progress, StudyDriver
from app.experiments.environment import environment
from app.experiments.meter import Meter, merged
from app.experiments.store import DONE, Experiment, Study
from app.scenarios.base import Check, Figures, Phase, Scenario
from loadgen.specfile import spec_to_dict
from loadgen.stats import ALL, slas_of


@dataclass
class ScenarioResult:
    """A scenario's phases' figures and its verdict."""

    study_id: int
    name: str
    figures: dict[str, Figures]
    checks: list[Check]
    status: str
    note: str = ""
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Return True when it ran to the end and every check held."""
        return self.status == DONE and bool(self.checks) and all(c.ok for c in self.checks)

    def to_dict(self) -> dict:
        return {"study_id": self.study_id, "scenario": self.name, "status": self.status, "note": self.note,
                "passed": self.passed, "wall_s": self.wall_s,
                "checks": [c.__dict__ for c in self.checks],
                "phases": {k: {"client": f.client, "server": f.server} for k, f in self.figures.items()}}


def run_scenario(lab, scenario: Scenario, *, full: bool = False, progress: Callable | None = None,
                 cancel: threading.Event | None = None) -> ScenarioResult:
    """Run every phase of a scenario, judge it, store it; restore the starting config. Blocks."""
    phases = scenario.phases(full)
    started = time.monotonic()
    base_text = lab.config.current_text(scenario.model)
    study_id = lab.experiments.add_study(Study(
        "scenario", scenario.title, scenario.model,
        {"scenario": scenario.name, "full": full, "expect": scenario.expect,
         "phases": [{"name": p.name, "seconds": p.seconds, "traffic": spec_to_dict(p.traffic)} for p in phases]},
        time.time(), base_config=base_text, env=environment(lab, scenario.model)))
    runner = _Phases(lab, scenario, phases, study_id, base_text, progress, cancel or threading.Event())
    status, note = runner.conclude(runner.run, base_text)
    checks = scenario.judge(runner.figures) if status == DONE else []
    result = ScenarioResult(study_id, scenario.name, runner.figures, checks, status, note, time.monotonic() - started)
    lab.experiments.update_study(study_id, status=status, note=note, result={
        "passed": result.passed, "checks": [c.__dict__ for c in checks], "wall_s": result.wall_s})
    runner.report(final=True)
    return result


class _Phases(StudyDriver):
    what, kept = "scenario", "phases"

    def __init__(self, lab, scenario: Scenario, phases: list[Phase], study_id: int, base_text: str, progress,
                 cancel: threading.Event) -> None:
        super().__init__(lab, scenario.model, study_id, cancel, progress)
        self.scenario, self.phases, self.base = scenario, phases, parse_config(base_text)
        self.figures: dict[str, Figures] = {}
        self.state = Progress(study_id, total=len(phases))

    def run(self) -> None:
        self.lab.stop_traffic(f"traffic stopped: scenario {self.scenario.name} takes over")
        slas = {}
        for phase in self.phases:
            slas |= slas_of(phase.traffic)
        with Meter(self.lab.load, self.lab.endpoint, self.model, slas) as meter:
            for phase in self.phases:
                if self.cancel.is_set():
                    raise Cancelled
                self._one(meter, phase)

    def _one(self, meter: Meter, phase: Phase) -> None:
        self.state.current, self.state.narration = phase.name, phase.narration
        self.report()
        config = phase.config(self.base)
        try:
            self.serve(config, f"scenario {self.scenario.name}: {phase.name}")
        except ConfigError as exc:
            raise Interrupted(f"{phase.name} could not be applied: {exc}") from exc
        windows = self.run_fixed(meter, phase.traffic, phase.warmup_s, phase.seconds, f"scenario phase {phase.name}")
        whole = merged(windows)
        figures = whole.figures()
        self.figures[phase.name] = Figures(figures["client"], figures["server"])
        self.lab.experiments.add(Experiment(
            f"{self.scenario.title}: {phase.name}", self.model, format_config(config), whole.t0, whole.t1,
            spec_to_dict(phase.traffic), figures["client"], figures["server"], kind="phase", study_id=self.study_id,
            point=phase.name, seed=phase.traffic.seed, windows=[w.to_dict() for w in windows],
            outcome={"narration": phase.narration}))
        self.state.done += 1
        row = figures["client"].get(ALL) or {}
        self.state.log.append(f"{phase.name}: {row.get('throughput_rps') or 0:,.0f} req/s, p50 "
                              f"{row.get('p50_ms') or float('nan'):,.1f} ms, p99 {row.get('p99_ms') or float('nan'):,.1f}"
                              f" ms, batch {figures['server'].get('avg_batch') or float('nan'):.2f}")
        self.report()

    def report(self, final: bool = False) -> None:
        self.publish(self.state, self.state.done, final)
