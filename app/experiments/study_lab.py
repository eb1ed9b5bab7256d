"""What a study needs from the lab, and nothing more: serve a config, run traffic, measure a window, mark, store.

Sweeps, A/B comparisons, trace-judged sweeps, scenarios and the autopilot take a StudyLab; app.lab.Lab is one (and
tests/experiments/test_study_lab.py holds every study module to these names). Typed here so a study reads as what
it does with the server, not as a reach into a service locator.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the parts' types, for readers and checkers; nothing here imports them at run time
    from app.config.apply import ConfigService
    from app.experiments.store.database import ExperimentStore
    from app.timeline.figures import Figures
    from app.timeline.markers import MarkerLog
    from app.metrics.poller import MetricsPoller
    from app.server.endpoint import Endpoint
    from app.server.status import ServerStatus
    from loadgen.controller import LoadController
    from loadgen.spec import LoadSpec


@runtime_checkable
class StudyLab(Protocol):
    """The lab as a study sees it."""

    endpoint: Endpoint  # where the server answers (a Meter reads /metrics and the statistics API there)
    config: ConfigService  # what serves (current, current_text, file_text, live, history), and its plans
    load: LoadController  # the shared load generator: running, spec, started_at, snapshots, record subscribers
    markers: MarkerLog  # changes on the charts: last_change (someone else's Apply, a restart), add, reloading
    experiments: ExperimentStore  # studies and their runs
    metrics: MetricsPoller  # the server's figures by scrape
    gpu_memory: dict  # model -> instance count -> GPU memory used (the GPU panel's and the autopilot's fit check)
    embedded: bool  # the lab started the server itself (a study's environment says so)

    def status(self) -> ServerStatus:
        """Return whether the server is up, and its models."""

    def apply(self, model: str, config, what: str, base: str | None = None, confirm_contract: bool = False):
        """Serve a config through safe apply, marked."""

    def apply_text(self, model: str, text: str, what: str, base: str | None = None,
                   confirm_contract: bool = False):
        """Serve a whole config.pbtxt text through safe apply, marked."""

    def rollback(self, model: str, version_id: str, what: str = "rollback"):
        """Serve a recorded config version again."""

    def start_traffic(self, spec: LoadSpec) -> None:
        """Start the shared load generator, marked."""

    def update_traffic(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the running load's rate or concurrency, marked."""

    def stop_traffic(self, why: str = "traffic stop") -> None:
        """Stop the load generator, marked."""

    def measure(self, model: str, t0: float, t1: float, include_held: bool = True) -> Figures:
        """Return the window figures of [t0, t1)."""


MEMBERS = frozenset(name for name in (*StudyLab.__annotations__, *vars(StudyLab)) if not name.startswith("_"))
