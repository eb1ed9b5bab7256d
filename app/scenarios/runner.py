"""Run a scenario on the lab's server: phase by phase, measured like A/B trials, judged, stored as a study."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.model_config import format_config, parse_config
from app.config.read import settings_of
from app.diagnosis.diagnose import diagnose_model
from app.experiments.driving import Cancelled, Interrupted, Progress, StudyDriver
from app.experiments.report.environment import environment
from app.lab.jobs import FunctionJob
from app.timeline.meter import Meter, merged
from app.store.database import DONE, Experiment, Study
from app.lab.ports import LabPort, StudyLab
from app.config.knobs import apply_knobs, describe
from app.scenarios.base import Check, Phase, PhaseFigures, Scenario, figure_text
from app.scenarios.claims import SCENARIOS
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures, ServerFigures
from loadgen.behind import fell_behind, sent_behind
from loadgen.limits import LIMITS
from loadgen.spec import LoadSpec, validate
from loadgen.spec_limits import check_stream
from loadgen.specfile import spec_to_dict
from loadgen.stats import ALL, slas_of
from loadgen.generate_stream import StreamRunner, StreamSpec, stream_figures


@dataclass
class ScenarioResult:
    """A scenario's phases' figures and its verdict."""

    study_id: int
    name: str
    figures: dict[str, PhaseFigures]
    checks: list[Check]
    status: str
    note: str = ""
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Return True when it ran to the end and every check held."""
        return self.status == DONE and bool(self.checks) and all(c.ok for c in self.checks)

    def caution(self) -> str:
        """Return a warning naming the phases in which the load generator fell behind, else ''."""
        return caution(dict(self.figures))

    def to_dict(self) -> dict:
        return {"study_id": self.study_id, "scenario": self.name, "status": self.status, "note": self.note,
                "passed": self.passed, "wall_s": self.wall_s,
                "checks": [c.__dict__ for c in self.checks],
                "phases": {k: {"client": f.client_dicts(), "server": f.server.to_dict(), "findings": f.findings,
                               "note": f.note} for k, f in self.figures.items()}}


def start_scenario(lab: LabPort, name: str, full: bool = False, on: StudyLab | None = None) -> None:
    """Start a guided scenario by name as the lab's background study (full: full-length phases); on: the lab to run
    it on (default this one; e.g. the lab's own models beside a user's repository: Lab.lab_models())."""
    scenario = SCENARIOS[name]
    target = on if on is not None else lab
    lab.start_job(FunctionJob("scenario", scenario.title, lambda progress, cancel: run_scenario(
        target, scenario, full=full, progress=progress, cancel=cancel)))


def run_scenario(lab: StudyLab, scenario: Scenario, *, full: bool = False, progress: Callable | None = None,
                 cancel: threading.Event | None = None) -> ScenarioResult:
    """Run every phase of a scenario, judge it, store it; restore the starting config. Blocks."""
    phases = scenario.phases(full)
    check_phases(phases)
    missing = scenario.missing({m.name for m in lab.status().models if m.state == "READY"})
    if missing:
        raise ValueError(f"{scenario.title!r} needs the lab's own model{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}, which this server does not serve: run it on the lab's models "
                         "(the page's 'Run on the lab's models', or `python -m app.scenarios run` without TRITON_URL)")
    started = time.monotonic()
    base_text = lab.served_text(scenario.model)
    study_id = lab.add_study(Study(
        "scenario", scenario.title, scenario.model,
        {"scenario": scenario.name, "full": full, "expect": scenario.expect,
         "phases": [{"name": p.name, "seconds": p.seconds, "traffic": spec_to_dict(p.traffic)} for p in phases]},
        time.time(), base_config=base_text, env=environment(lab, scenario.model)))
    runner = _Phases(lab, scenario, phases, study_id, base_text, progress, cancel or threading.Event())
    status, note = runner.conclude(runner.run, base_text)
    checks = scenario.judge(runner.figures) if status == DONE else []
    result = ScenarioResult(study_id, scenario.name, runner.figures, checks, status, note, time.monotonic() - started)
    lab.update_study(study_id, status=status, note=note, result={
        "passed": result.passed, "checks": [c.__dict__ for c in checks], "wall_s": result.wall_s})
    runner.report(final=True)
    return result


def check_phases(phases: list[Phase]) -> None:
    """Raise ValueError naming the first phase whose length or traffic is outside the one table of load bounds
    (loadgen.limits): checked before anything runs, whoever defined the phases."""
    seconds = LIMITS["trial_s"].within(what="seconds measured per phase")
    warmup = LIMITS["trial_warmup_s"].within(what="warm-up per phase (s)")
    for phase in phases:
        try:
            seconds.check(phase.seconds, "seconds")
            warmup.check(phase.warmup_s, "warmup_s")
            if isinstance(phase.traffic, LoadSpec):
                validate(phase.traffic)
            elif isinstance(phase.traffic, StreamSpec):
                check_stream(phase.traffic)
            else:
                raise ValueError(f"traffic must be a LoadSpec or a StreamSpec, got {type(phase.traffic).__name__}")
        except ValueError as exc:
            raise ValueError(f"phase {phase.name!r}: {exc}") from None


class _Phases(StudyDriver):
    what, kept = "scenario", "phases"

    def __init__(self, lab: StudyLab, scenario: Scenario, phases: list[Phase], study_id: int, base_text: str, progress,
                 cancel: threading.Event) -> None:
        super().__init__(lab, scenario.model, study_id, cancel, progress)
        self.scenario, self.phases, self.base = scenario, phases, parse_config(base_text)
        self.figures: dict[str, PhaseFigures] = {}
        self.served: dict[str, object] = {}  # each phase's config, for the fixes of later phases
        self.state = Progress(study_id, total=len(phases))

    def run(self) -> None:
        self.lab.stop_traffic(f"traffic stopped: scenario {self.scenario.name} takes over")
        slas = {}
        for phase in self.phases:
            if isinstance(phase.traffic, LoadSpec):
                slas |= slas_of(phase.traffic)
        with self.lab.meter(self.model, slas) as meter:
            for phase in self.phases:
                if self.cancel.is_set():
                    raise Cancelled
                self._one(meter, phase)

    def _one(self, meter: Meter, phase: Phase) -> None:
        self.state.current, self.state.narration = phase.name, phase.narration
        self.report()
        config, fix = self._config(phase)
        if config is None:
            self.figures[phase.name] = PhaseFigures(model=self.model, note=fix)
            self.state.done += 1
            self.state.log.append(f"{phase.name}: skipped — {fix}")
            self.report()
            return
        if fix:
            self.state.narration = f"{phase.narration} The diagnosis panel's one-click fix: {fix}."
            self.report()
        waited = self.wait_idle(meter)
        if waited >= 1.0:
            self.state.log.append(f"waited {waited:.1f} s for the previous phase's backlog to drain")
        try:
            self.serve(config, f"scenario {self.scenario.name}: {phase.name}")
        except ConfigError as exc:
            raise Interrupted(f"{phase.name} could not be applied: {exc}") from exc
        if isinstance(phase.traffic, StreamSpec):
            windows, client = self._stream(meter, phase)
        else:
            windows = self.run_fixed(meter, phase.traffic, phase.warmup_s, phase.seconds, f"scenario phase {phase.name}")
            client = None
        whole = merged(windows)
        figures = whole.figures(self.model)
        if client is not None:  # streamed generations: the client side is the streams', not the lab traffic's
            figures = replace(figures, client=client)
        findings = self._diagnose(config, whole) if phase.diagnose else []
        self.served[phase.name] = config
        self.figures[phase.name] = PhaseFigures(self.model, whole.t0, whole.t1, figures.server, figures.client,
                                                figures.reset, findings)
        self.lab.add_run(Experiment(
            f"{self.scenario.title}: {phase.name}", self.model, format_config(config), whole.t0, whole.t1,
            spec_to_dict(phase.traffic), figures.client_dicts(), figures.server.to_dict(), kind="phase",
            study_id=self.study_id, point=phase.name, seed=phase.traffic.seed, windows=[w.to_dict() for w in windows],
            outcome={"narration": phase.narration, "diagnosed": phase.diagnose, "findings": findings, "fix": fix}))
        self.state.done += 1
        self.state.log.append(_summary(phase, figures, findings))
        self.report()

    def _stream(self, meter: Meter, phase: Phase) -> tuple[list, dict[str, ClientFigures]]:
        """Stream generations for the phase: drop the warm-up, measure `seconds` (server side in 1 s windows with
        exact edges; client side from the streams that ended inside); return the windows and the client row."""
        runner = StreamRunner(phase.traffic, self.lab.server_facts().endpoint.http_url).start()
        try:
            meter.wait_until(time.time() + phase.warmup_s, self.cancel)
            t0 = runner.now_s()
            windows = self.measure(meter, phase.seconds, lab_traffic=False)
            t1 = runner.now_s()
        finally:
            records = runner.stop()
        row = stream_figures(records, t0, t1)
        return windows, {ALL: ClientFigures.from_dict({**row, "throughput_rps": row["requests_per_s"],
                                                       "p50_ms": row["e2e_p50_ms"], "p99_ms": row["e2e_p99_ms"]})}

    def _config(self, phase: Phase) -> tuple[object | None, str]:
        """Return the phase's config and, for a fix phase, the fix in words; (None, why) when there is none."""
        if phase.fix_of is None:
            return phase.config(self.base), ""
        source, pattern = phase.fix_of
        finding = next((f for f in self.figures[source].findings if f["pattern"] == pattern), None)
        if finding is None or not finding["knobs"]:
            return None, f"the diagnosis of '{source}' offered no fix for pattern {pattern}"
        sick = self.served[source]
        return set_settings(sick, apply_knobs(settings_of(sick), finding["knobs"])), describe(finding["knobs"])

    def _diagnose(self, config, whole) -> list[dict]:
        """Return what the diagnosis panel says about the phase: the same figures and rule as on screen."""
        seen = diagnose_model(self.lab, self.model, whole.t0, whole.t1, settings_of(config))
        return [{"pattern": f.pattern, "title": f.title, "evidence": f.evidence, "suggestion": f.suggestion,
                 "knobs": f.knobs} for f in seen.findings]

    def report(self, final: bool = False) -> None:
        self.publish(self.state, self.state.done, final)



def _summary(phase: Phase, figures: Figures, findings: list[dict]) -> str:
    """Return the log line of a measured phase (its figures as the phase table shows them)."""
    row = figures.row()
    if row.tokens_per_s is not None:  # streamed generations
        return (f"{phase.name}: {figure_text('tokens_per_s', row.tokens_per_s)}, first token p50 "
                f"{figure_text('ttft_p50_ms', row.ttft_p50_ms)}, end-to-end p99 "
                f"{figure_text('e2e_p99_ms', row.e2e_p99_ms)}, {row.failures or 0:,} failed")
    line = (f"{phase.name}: {figure_text('throughput_rps', row.throughput_rps or 0)}, p50 "
            f"{figure_text('p50_ms', row.p50_ms)}, p99 {figure_text('p99_ms', row.p99_ms)}, batch "
            f"{figure_text('avg_batch', figures.get('avg_batch'))}")
    if (share := figures.behind()) is not None:
        line += f"; the load generator fell behind ({sent_behind(share)})"
    return line + (f"; diagnosis: {', '.join(f['pattern'] for f in findings) or 'nothing'}" if phase.diagnose else "")


def caution(phases: dict[str, Figures]) -> str:
    """Return a warning naming the phases (phase -> its figures) in which the load generator fell behind its
    schedule (loadgen.behind), else ''."""
    slipped = [(phase, share) for phase, figures in phases.items() if (share := figures.behind()) is not None]
    if not slipped:
        return ""
    which = "; ".join(f"{phase}: {sent_behind(share)}" for phase, share in slipped)
    return (f"{fell_behind(len(slipped), len(phases), 'phases', which)}: the server saw a smoother, lighter load there than the scenario asks for, so the verdict rests on a "
            "different load. Run it again with less running beside it.")


def phase_table(runs: list[Experiment]) -> list[dict]:
    """Return one row per phase (and per traffic class when there are several): what each phase measured, each
    figure as text at its precision ('—' when not measured), the same numbers the checks' measured texts use;
    a column only some phases have (diagnosis, fix, generator behind) is '' in the others."""
    rows = []
    for run in runs:
        outcome, figures = run.outcome or {}, run.window()
        classes = [c for c in figures.client if c != ALL] if len(figures.client) > 2 else [ALL]
        for cls in classes:
            row = figures.row(cls)
            rows.append({"phase": run.point, **({"class": cls} if cls != ALL else {}),
                         **_cells(row, _CLIENT_COLUMNS),
                         **(_cells(row, _STREAM_COLUMNS) if row.tokens_per_s is not None else {}),
                         **_cells(figures.server, _SERVER_COLUMNS),
                         **({"diagnosis": ", ".join(f["pattern"] for f in outcome["findings"]) or "nothing"}
                            if outcome.get("diagnosed") else {}),
                         **({"fix applied": outcome["fix"]} if outcome.get("fix") else {}),
                         **({"generator behind": sent_behind(share)}
                            if (share := figures.behind()) is not None else {})})
    columns = list(dict.fromkeys(["phase", *(["class"] if any("class" in row for row in rows) else []),
                                  *(key for row in rows for key in row)]))  # every row every column, class second
    return [{column: row.get(column, "") for column in columns} for row in rows]


_CLIENT_COLUMNS = {"throughput (req/s)": "throughput_rps", "goodput (req/s)": "goodput_rps", "p50 (ms)": "p50_ms",
                   "p99 (ms)": "p99_ms"}
_STREAM_COLUMNS = {"tokens/s": "tokens_per_s", "TTFT p50 (ms)": "ttft_p50_ms", "TTFT p99 (ms)": "ttft_p99_ms"}
_SERVER_COLUMNS = {"avg batch": "avg_batch", "queue (ms)": "queue_us", "compute (ms)": "compute_us"}  # µs shown in ms


def _cells(figures: ClientFigures | ServerFigures, columns: dict[str, str]) -> dict[str, str]:
    """Return the columns' cells: each figure at its precision, without its unit (the header has it)."""
    return {column: figure_text(key, figures.get(key), unit=False) for column, key in columns.items()}
