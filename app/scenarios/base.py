"""What a scenario is: phases of config and traffic on the live server, the expected effect, and its judge.

A scenario is data. Each phase names a config (a change over the model's config at the start), the
traffic it runs and for how long, and a narration shown while it runs. After the last phase, the judge
turns the phases' figures into checks: a claim, what was measured, the margin it was held to, and
whether it held. Margins compare ratios between phases — never absolute times — and say which
measured spread they come from.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.config.model_config import ModelConfig
from loadgen.spec import LoadSpec
from loadgen.stream import StreamSpec
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
class Scenario:
    """A claim of the source documents, reproducible in one click and checked at the end."""

    name: str  # the CLI name, e.g. instance-sweep
    title: str
    page: str  # the key of the concept page that offers it: instances, dynamic, sequence, ...
    model: str
    expect: str  # the expected effect, stated before it runs
    phases: Callable[[bool], list[Phase]]  # full=False: shortened phases (CI), True: full length
    judge: Callable[[dict[str, Figures]], list[Check]]
    source: str = ""  # where the claim comes from (chapter or guide)

    def needs(self) -> frozenset[str]:
        """Return the models it drives: its model and every model its phases send traffic to (the lab's own)."""
        models = {self.model}
        for phase in self.phases(False):
            traffic = phase.traffic
            models |= set(traffic.targets()) if isinstance(traffic, LoadSpec) else {traffic.model}
        return frozenset(models)

    def missing(self, ready: set[str] | frozenset[str]) -> list[str]:
        """Return the models it needs that are not among `ready` (the server's READY models), sorted."""
        return sorted(self.needs() - set(ready))


@dataclass(frozen=True)
class Figures:
    """A phase's measured figures: client rows per class and server figures (meter.Window.figures)."""

    client: dict = field(default_factory=dict)
    server: dict = field(default_factory=dict)
    findings: list[dict] = field(default_factory=list)  # the diagnosis of the phase (Phase.diagnose)
    note: str = ""  # why a phase has no figures (a fix that had nothing to fix)

    def c(self, key: str, cls: str = ALL):
        """Return a client figure of a class ('all' by default)."""
        return (self.client.get(cls) or {}).get(key)

    def s(self, key: str):
        """Return a server figure."""
        return self.server.get(key)

    @property
    def patterns(self) -> list[str]:
        """Return the patterns the diagnosis named, most actionable first."""
        return [f["pattern"] for f in self.findings]


def ratio_check(claim: str, a: float | None, b: float | None, at_least: float | None = None,
                at_most: float | None = None, what: str = "", why: str = "") -> Check:
    """Return the check 'a / b is at least (or at most) a bound'; a missing figure fails with that said."""
    if a is None or b is None or not b:
        return Check(claim, f"{what}: not measured", _bound(at_least, at_most, why), False)
    r = a / b
    ok = (at_least is None or r >= at_least) and (at_most is None or r <= at_most)
    return Check(claim, f"{what} = {a:,.1f} / {b:,.1f} = {r:.2f}", _bound(at_least, at_most, why), ok)


def named_check(claim: str, figures: Figures, pattern: str) -> Check:
    """Return the check 'the diagnosis named this pattern' for a phase diagnosed by the panel's rule."""
    found = figures.patterns
    return Check(claim, f"the diagnosis named {', '.join(found) or 'nothing'}" + (f" — {figures.note}" if figures.note else ""),
                 f"{pattern} among them", pattern in found)


def _bound(at_least: float | None, at_most: float | None, why: str) -> str:
    parts = ([f"≥ {at_least:g}"] if at_least is not None else []) + ([f"≤ {at_most:g}"] if at_most is not None else [])
    return " and ".join(parts) + (f" ({why})" if why else "")
