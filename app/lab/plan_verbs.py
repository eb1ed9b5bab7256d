"""The Plans port: what a model serves, and changes to it through safe apply, each marked on the charts.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_config, _metrics, _markers, _load,
_fleet_apply)."""
from __future__ import annotations

from app.config.apply import ApplyPlan, ApplyResult
from app.config.caps import ServerCaps
from app.config.history import HistoryProblem, Version
from app.config.model_config import ModelConfig
from app.lab.ports import ApplyRoute
from app.traffic.form import load_targets


class PlanVerbs:
    """What a model serves, and changes to it through safe apply, each marked on the charts."""

    def served_config(self, model: str) -> ModelConfig:
        """Return the config the model serves (ConfigError when it cannot be read)."""
        return self._config.current(model)

    def served_text(self, model: str) -> str:
        """Return the model's config.pbtxt, or the served config formatted when it has none."""
        return self._config.current_text(model)

    def file_text(self, model: str) -> str | None:
        """Return the model's config.pbtxt as written, None when it has none."""
        return self._config.file_text(model)

    def plan(self, model: str, proposed: ModelConfig) -> ApplyPlan:
        """Return what applying proposed would load, write and change."""
        return self._config.plan(model, proposed)

    def preview_text(self, model: str, text: str) -> tuple[ModelConfig, str, list]:
        """Return (config, diff, contract changes) of a whole config.pbtxt text."""
        return self._config.text_preview(model, text)

    def server_caps(self) -> ServerCaps:
        """Return what the server can serve (backends, GPUs)."""
        return self._config.caps()

    def apply(self, model: str, config: ModelConfig, what: str, base: str | None = None,
              confirm_contract: bool = False) -> ApplyResult:
        """Hot-reload a model with a new config (checked, verified, rolled back on failure); mark the band.
        With a fleet, every replica in turn (one band each), the updated ones rolled back when one fails."""
        if self._fleet_apply is not None:
            self._metrics.poll_once()
            return self._fleet_apply.apply(model, config, what, base=base, confirm_contract=confirm_contract)
        return self._reload(model, "apply", what, lambda: self._config.apply(
            model, config, base=base, confirm_contract=confirm_contract))

    def apply_text(self, model: str, text: str, what: str, base: str | None = None,
                   confirm_contract: bool = False) -> ApplyResult:
        """Hot-reload a model with a whole config.pbtxt text (the raw editor, a study going back to its start),
        written as given; marked like apply."""
        return self._reload(model, "apply", what, lambda: self._config.apply_text(
            model, text, base=base, confirm_contract=confirm_contract))

    def undo(self, model: str) -> ApplyResult:
        """Go back to the model's previous config version."""
        return self._reload(model, "undo", "undo", lambda: self._config.undo(model))

    def rollback(self, model: str, version_id: str, what: str = "rollback") -> ApplyResult:
        """Serve a recorded config version again (a study going back to a model without config.pbtxt)."""
        return self._reload(model, "apply", what, lambda: self._config.rollback(model, version_id))

    def apply_blocked(self) -> str | None:
        """Return why no Apply can take effect on this server, None when one can."""
        return self._config.apply_blocked()

    def undo_blocked(self, model: str) -> str | None:
        """Return why Undo cannot run for the model, None when it can."""
        return self._config.undo_blocked(model)

    def apply_route(self) -> ApplyRoute:
        """Return how an Apply reaches the server (over gRPC or HTTP once the first Apply has asked)."""
        transport = self._config.control.transport if self._config.mode == "explicit" else None
        return ApplyRoute(self._config.mode, transport.name if transport else "", transport.why if transport else "")

    def versions(self, model: str) -> list[Version]:
        """Return every config version the model served, oldest first."""
        return self._config.history(model)

    def version_text(self, model: str, version_id: str) -> str:
        """Return the config text of one recorded version."""
        return self._config.history_store.text(model, version_id)

    def history_problems(self, model: str) -> list[HistoryProblem]:
        """Return the unreadable versions of the model's history, in words."""
        return self._config.history_problems(model)

    def _reload(self, model: str, kind: str, what: str, action):
        self._metrics.poll_once()  # the statistics API restarts at a reload: keep its batch counts up to now
        band = self._markers.begin(model, kind, what)
        try:
            result = action()
        except Exception as exc:
            self._markers.finish(band, detail=str(exc), ok=False, text=f"{what} — not applied")
            raise
        self._markers.finish(band, detail=result.diff)
        if result.contract:
            self._follow_contract(model, result.contract)
        return result

    def _follow_contract(self, model: str, changes: tuple[str, ...]) -> None:
        """After a confirmed contract change, running traffic to the model is rebuilt for the new contract (its
        requests are encoded from what the model now serves) instead of failing on the old one."""
        spec = self._load.spec
        if not self._load.running or spec is None or model not in load_targets(spec):
            return
        self.stop_traffic(f"traffic stop: {model}'s contract changed ({'; '.join(changes)})")
        try:
            self.start_traffic(spec)
        except (ValueError, RuntimeError) as exc:
            self._markers.add(model, "traffic", f"traffic not restarted for the new contract: {exc}")
            return
        self._markers.add(model, "traffic", "traffic rebuilt for the new contract: requests now match what it serves")
