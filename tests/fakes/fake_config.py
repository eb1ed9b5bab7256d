"""The config service of a FakeLab (tests/fakes/fake_lab.py): app.config.apply.ConfigService itself — validation, the
contract, a stale base, the history, the file written — on the simulated server: what serves is the simulator's, a
load serves at once (or is refused with a test's reason), a smoke check passes unless a test says otherwise."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.config.apply import ConfigService
from app.config.caps import ServerCaps
from app.config.errors import ServerQueryError
from app.config.model_config import ModelConfig, copy_config, from_json
from app.server.control import Transport
from app.server.control_mode import ControlMode
from tests.fakes.auto_complete import with_defaults
from tests.fakes.sim_triton import ENDPOINT

if TYPE_CHECKING:
    from tests.fakes.fake_lab import FakeLab


class FakeControl:
    """The model control API of the simulated server: a load serves the config at once (refuse: names to fail)."""

    def __init__(self, lab: FakeLab) -> None:
        self.lab = lab
        self.transport = Transport("grpc", "the fake lab's server")
        self.refuse: dict[str, str] = {}  # model -> the reason its next loads fail with

    def load(self, model: str, config_json: str | None = None, timeout_s: float = 45.0) -> None:
        from app.server.control import ControlError  # noqa: PLC0415

        if not self.lab.sim.up:
            raise ControlError("connection refused (the fake lab's server is down)")
        if model in self.refuse:
            raise ControlError(self.refuse[model])
        config = from_json(config_json) if config_json else self.lab.folder_config(model)
        self.lab.sim.serve(model, with_defaults(config))
        self.lab.states[model] = ("READY", "")


class FakeConfigService(ConfigService):
    """The lab's config service on the simulated server: the served config is the simulator's."""

    def __init__(self, lab: FakeLab, repo: Path | None, history_dir: Path, control: ControlMode) -> None:
        from app.config.history import ConfigHistory  # noqa: PLC0415

        super().__init__(ENDPOINT, repo, history=ConfigHistory(history_dir), clock=time.perf_counter,
                         mode=control.mode, why_not=control.why_not or "", poll_wait=self._poll)
        self.lab = lab
        self.control = FakeControl(lab)
        self.smoke_failure: dict[str, str] = {}  # model -> what its next smoke checks answer (a failure)

    def caps(self) -> ServerCaps:
        gpus = len(self.lab.gpus.gpus) if self.lab.gpus is not None else 0
        return ServerCaps.of_repository(self.repo, gpus) if self.repo is not None else ServerCaps(gpus)

    def live(self, model: str) -> ModelConfig:
        if not self.lab.sim.up:
            raise ServerQueryError(f"cannot read the live config of {model!r}: connection refused (the fake lab's "
                                   "server is down)")
        model_state = self.lab.states.get(model, ("", ""))[0]
        if model_state != "READY" or model not in self.lab.sim.models:
            raise ServerQueryError(f"cannot read the live config of {model!r}: it is not loaded")
        return copy_config(self.lab.sim.models[model].config)

    def _verify(self, model: str, served: ModelConfig) -> str:
        from app.config.verify import SmokeFailure  # noqa: PLC0415

        if model in self.smoke_failure:
            raise SmokeFailure(self.smoke_failure[model])
        return "READY, and a smoke request answered (fake)"

    def _ready_configs(self, but: str) -> dict[str, ModelConfig]:
        return {name: self.live(name) for name, (state, _) in self.lab.states.items()
                if state == "READY" and name != but}

    def _poll(self, model: str, check, timeout_s: float) -> ModelConfig:
        """Poll mode: the server's next poll loads the folder's config at once; wait for nothing more."""
        self.control.load(model)
        served = self.live(model)
        if not check(served):
            raise ServerQueryError(f"the fake lab's server polled {model!r} but does not serve the change")
        return served
