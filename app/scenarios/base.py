"""What a scenario is: phases of config and traffic on the live server, the expected effect, and its judge.

A scenario is data. Each phase names a config (a change over the model's config at the start), the
traffic it runs and for how long, and a narration shown while it runs. After the last phase, the judge
turns the phases' figures into checks: a claim, what was measured, the margin it was held to, and
whether it held. Margins compare ratios between phases — never absolute times — and say which
measured spread they come from.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from dataclasses import dataclass, field

from app.config.model_config import ModelConfig
from app.timeline.figures import Figures
from app.metrics.catalog import BY_KEY, fmt
from loadgen.spec import LoadSpec
from loadgen.generate_stream import StreamSpec
from loadgen.stats import ALL


@dataclass(frozen=True)
class Phase:
    """One step: serve this config, send this traffic, measure this long."""

    name: str
    narration: str
    config: Callable[[ModelConfig], ModelConfig]
    traffic: LoadSpec | StreamSpec  # StreamSpec: streaming generations over generate_stream
    seconds: float = 4.0
    warmup_s: float = 1.0
    diagnose: bool = False  # name the field guide's pattern of this phase with the diagnosis panel's rule
    fix_of: tuple[str, str] | None = None  # (phase, pattern): serve that phase's config with the fix the
    # diagnosis offered for the pattern there (config is then ignored)


@dataclass(frozen=True)
class Check:
    """One claim of a scenario held against what was measured."""

    claim: str
    measured: str
    margin: str
    ok: bool


@dataclass(frozen=True)
class Script:
    """What the presenter says: before the run, while each phase runs (by phase name), after it by verdict."""

    before: str
    phases: dict[str, str]  # phase name -> what to point out while it runs
    after_held: str
    after_not: str

    def during(self, phase: str) -> str:
        """Return the line for a phase ('' for a phase the script does not know)."""
        return self.phases.get(phase, "")

    def after(self, held: bool) -> str:
        """Return what to say once the verdict is in."""
        return self.after_held if held else self.after_not


@dataclass(frozen=True)
class Scenario:
    """A claim of the source documents, reproducible in one click and checked at the end."""

    name: str  # the CLI name, e.g. instance-sweep
    title: str
    page: str  # the key of the concept page that offers it: instances, dynamic, sequence, ...
    model: str
    expect: str  # the expected effect, stated before it runs
    phases: Callable[[bool], list[Phase]]  # full=False: shortened phases (CI), True: full length
    judge: Callable[[dict[str, PhaseFigures]], list[Check]]
    source: str = ""  # where the claim comes from (chapter or guide)
    script: Script | None = None  # the presenter's words (app/scenarios/scripts.py)

    @cached_property
    def _needs(self) -> frozenset[str]:  # the phases are fixed: built once (a page draws them at every rerun)
        models = {self.model}
        for phase in self.phases(False):
            traffic = phase.traffic
            models |= set(traffic.targets()) if isinstance(traffic, LoadSpec) else {traffic.model}
        return frozenset(models)

    def needs(self) -> frozenset[str]:
        """Return the models it drives: its model and every model its phases send traffic to (the lab's own)."""
        return self._needs

    def missing(self, ready: set[str] | frozenset[str]) -> list[str]:
        """Return the models it needs that are not among `ready` (the server's READY models), sorted."""
        return sorted(self.needs() - set(ready))


@dataclass(frozen=True)
class PhaseFigures(Figures):
    """A phase's window figures (app.timeline.figures.Figures), with what the diagnosis found in it."""

    findings: list[dict] = field(default_factory=list)  # the diagnosis of the phase (Phase.diagnose)
    note: str = ""  # why a phase has no figures (a fix that had nothing to fix)

    def c(self, key: str, cls: str = ALL):
        """Return a client figure of a class ('all' by default): the judges' short form of client_value."""
        return self.client_value(key, cls)

    def s(self, key: str):
        """Return a server figure."""
        return self.server.get(key)

    @property
    def patterns(self) -> list[str]:
        """Return the patterns the diagnosis named, most actionable first."""
        return [f["pattern"] for f in self.findings]


# Figures of scenario phases that the metric table does not hold (streamed generations, retries): unit, digits.
_OWN_FIGURES = {"tokens_per_s": ("tokens/s", 0), "ttft_p50_ms": ("ms", 2), "ttft_p99_ms": ("ms", 2),
                "e2e_p50_ms": ("ms", 2), "e2e_p99_ms": ("ms", 2), "sent": ("attempts", 0),
                "requests": ("requests", 0), "n": ("generations", 0), "failures": ("generations", 0)}
_COUNTS = ("requests", "attempts", "generations", "inferences")


def figure_text(key: str | None, value, unit: bool = True) -> str:
    """Return a phase's figure at its precision (the metric table's, or _OWN_FIGURES'), '—' when absent: the
    phase table and the checks' measured texts show the same numbers."""
    if key in BY_KEY:
        return fmt(key, value, unit)
    if value is None or value != value:  # NaN
        return "—"
    shown_unit, digits = _OWN_FIGURES.get(key or "", ("", 1))
    text = f"{value:,.{digits}f}"
    return f"{text} {shown_unit}" if unit and shown_unit and shown_unit not in _COUNTS else text


def ratio_check(claim: str, a: float | None, b: float | None, at_least: float | None = None,
                at_most: float | None = None, what: str = "", why: str = "", key: str | None = None) -> Check:
    """Return the check 'a / b is at least (or at most) a bound'; a missing figure fails with that said.
    key: the figure a and b are (shown at its precision and unit, as the phase table shows it)."""
    if a is None or b is None or not b:
        return Check(claim, f"{what}: not measured", margin_text(at_least, at_most, why), False)
    r = a / b
    ok = (at_least is None or r >= at_least) and (at_most is None or r <= at_most)
    return Check(claim, f"{what} = {figure_text(key, a)} / {figure_text(key, b)} = {r:.2f}",
                 margin_text(at_least, at_most, why), ok)


def change_check(claim: str, change: float | None, per: float | None, words: str, what: str, margin: str,
                 at_least: float | None = None, at_most: float | None = None, key: str | None = None) -> Check:
    """Return the check 'change ÷ per is within bounds': words say the figures the change is between as the phase
    table shows them, then 'what = change / per = ratio' (signed: a fall stays a fall, never clamped to 0)."""
    if change is None or per is None or not per:
        return Check(claim, f"{words}; {what}: not measured", margin, False)
    r = change / per
    ok = (at_least is None or r >= at_least) and (at_most is None or r <= at_most)
    return Check(claim, f"{words}; {what} = {signed_text(key, change)} / {figure_text(key, per)} = {r:.2f}", margin,
                 ok)


def signed_text(key: str | None, change: float) -> str:
    """Return a change at its figure's precision with its sign: '+10.90 ms', '-19.20 ms'."""
    return ("-" if change < 0 else "+") + figure_text(key, abs(change))


def named_check(claim: str, figures: PhaseFigures, pattern: str) -> Check:
    """Return the check 'the diagnosis named this pattern' for a phase diagnosed by the panel's rule."""
    found = figures.patterns
    return Check(claim, f"the diagnosis named {', '.join(found) or 'nothing'}" + (f" — {figures.note}" if figures.note else ""),
                 f"{pattern} among them", pattern in found)


def margin_text(at_least: float | None, at_most: float | None, why: str) -> str:
    """Return a check's margin in words: '≥ 1.5 and ≤ 2 (why)'."""
    parts = ([f"≥ {at_least:g}"] if at_least is not None else []) + ([f"≤ {at_most:g}"] if at_most is not None else [])
    return " and ".join(parts) + (f" ({why})" if why else "")
