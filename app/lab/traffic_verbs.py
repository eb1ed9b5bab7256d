"""The Traffic port: the one load generator every page and session shares, each change marked.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_load, _markers)."""
from __future__ import annotations

from collections.abc import Callable

from app.lab.ports import TrafficState
from loadgen.controller import LoadSnapshot
from app.traffic.form import load_targets
from loadgen.report import describe_load
from loadgen.records import Record
from loadgen.spec import LoadSpec


class TrafficVerbs:
    """The one load generator every page and session shares, each change marked."""

    def traffic(self) -> TrafficState:
        """Return what the load generator runs now."""
        load = self._load
        return TrafficState(load.running, load.spec, load.started_at, load.last_started_at, load.runs,
                            load.worker.pid)

    def traffic_snapshot(self, window_s: float = 120.0) -> LoadSnapshot:
        """Return the running (or last) run's per-second timeline of the last window_s, and its summary."""
        return self._load.snapshot(window_s=window_s)

    def traffic_window(self, t0: float, t1: float) -> dict[str, dict]:
        """Return per-class client figures over the whole seconds of [t0, t1), of every run (all its models)."""
        return self._load.window(t0, t1)

    def traffic_records(self, fn: Callable[[list[Record]], None]) -> Callable[[], None]:
        """Hand every batch of the load generator's records to fn (its own thread); return the unsubscribe."""
        return self._load.subscribe(fn)

    def start_traffic(self, spec: LoadSpec) -> None:
        """Start the shared load generator and mark it on every target model's charts."""
        self._load.start(spec)
        self._mark_traffic(spec, f"traffic start: {describe_load(spec)}")

    def update_traffic(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the running load's rate or concurrency, marked."""
        spec = self._load.spec
        if not self._load.running or spec is None:
            return
        self._load.update(rate=rate, concurrency=concurrency)
        change = f"rate → {rate:g} req/s" if rate is not None else f"concurrency → {concurrency}"
        self._mark_traffic(spec, f"traffic update: {change}")

    def reset_traffic_stats(self) -> None:
        """Start the client statistics again from now (marked)."""
        spec = self._load.spec
        if self._load.reset_stats() and spec is not None:
            self._mark_traffic(spec, "client statistics reset")

    def stop_traffic(self, why: str = "traffic stop") -> None:
        """Stop the load generator (when running) and mark it."""
        spec = self._load.spec
        running = self._load.running
        self._load.stop()
        if running and spec is not None:
            self._mark_traffic(spec, why)

    def _mark_traffic(self, spec: LoadSpec, text: str) -> None:
        for model in sorted(load_targets(spec)):
            self._markers.add(model, "traffic", text)
