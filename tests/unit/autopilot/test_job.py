"""The autopilot's job on a lab, window by window: a stepwise add one reload at a time (each marked, paced, stopped
by a turn-off, by the GPU's room or by a refusal), the count it serves shown and recorded, and the run replayed (a
stand-in lab of StudyLab's verbs with a fixed clock: no server, no timing)."""
from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from app.autopilot.forecast import ForecastClock
from app.autopilot.job import AutopilotJob, AutopilotProgress, gpu_room, later_s, replay
from app.autopilot.pilot import APPLIED, Bounds, Decision, DecisionOutcome
from app.autopilot.steered import served_counts
from app.config.edits import set_settings
from app.config.errors import ConfigError
from app.config.model_config import ModelConfig
from app.config.read import settings_of
from app.config.settings import InstanceGroup, Kind, ModelSettings
from app.config.knobs import apply_knobs
from app.metrics.gpu import GpuMemory, GpuView, gpus_of
from app.store.database import INTERRUPTED
from app.traffic.form import TrafficForm, build_spec
from tests.helpers import wait_until
from tests.unit.autopilot.test_forecast import CROWD, MODEL
from tests.unit.autopilot.test_pilot import SLA, T0, fig, settings


class _StepLab:
    """The verbs of app.lab.ports.StudyLab an AutopilotJob window uses: the served config, the window's figures (a
    quiet 100/s), the safe apply (each recorded; refuse_at: that apply is refused), markers and the GPU view."""

    def __init__(self, instances: int, cancel: threading.Event | None = None, cancel_after: int = 0,
                 refuse_at: int = 0) -> None:
        self.served = set_settings(ModelConfig(), settings(instances, 500))
        self.applied: list[tuple[int, str, float]] = []
        self.marked: list[str] = []
        self._cancel, self._cancel_after, self._refuse_at, self._applies = cancel, cancel_after, refuse_at, 0

    def served_config(self, model):
        return self.served

    def measure(self, model, t0, t1, include_held=True):  # a quiet window of 100/s ending at t1
        return fig(12.0, t1 - T0, seconds=t1 - t0, offered=100, served=100)

    def last_change(self, model, kinds=("apply", "undo", "restart")):
        return None

    def mark(self, model, kind, text):
        self.marked.append(text)

    def gpu_view(self, model):
        return None

    def apply(self, model, config, what, base=None, confirm_contract=False):
        self._applies += 1
        if self._applies == self._refuse_at:
            raise ConfigError("the server refused: instance 3 failed to load")
        self.served = config
        self.applied.append((settings_of(config).instance_groups[0].count, what, time.monotonic()))
        if self._cancel is not None and len(self.applied) == self._cancel_after:
            self._cancel.set()


def test_the_job_applies_a_stepwise_add_one_reload_at_a_time_each_marked_and_stops_on_turn_off(monkeypatch):
    monkeypatch.setattr("app.autopilot.job.ADD_GAP_S", 0.05)
    decision = Decision(T0, "add", "the forecast expects 800/s: +2 instances (1 → 3) before it arrives, one per "
                        "reload", {"instance_count": 3}, {"forecast": {"lead_s": 3.0}}, stepwise=True)
    lab = _StepLab(1)
    job, reloads = AutopilotJob(lab, MODEL, Bounds(SLA, 1, 4, (), 4.0)), []
    job._apply(decision, lab.served, settings_of(lab.served), reloads)
    assert [n for _, n in reloads] == [2, 3] and reloads[0][0] < reloads[1][0], reloads
    assert [(n, what) for n, what, _ in lab.applied] == [
        (2, f"{decision.marker_text} — reload 1 of 2: 1 → 2"), (3, f"{decision.marker_text} — reload 2 of 2: 2 → 3")]
    assert lab.applied[1][2] - lab.applied[0][2] >= 0.05, lab.applied  # the pause between them
    # not stepwise: one reload, the decision's own marker
    lab = _StepLab(1)
    AutopilotJob(lab, MODEL, Bounds(SLA, 1, 4, (), 4.0))._apply(
        replace(decision, stepwise=False), lab.served, settings_of(lab.served), [])
    assert [(n, what) for n, what, _ in lab.applied] == [(3, decision.marker_text)]
    # turned off after the first reload: no second one
    cancel = threading.Event()
    lab = _StepLab(1, cancel, cancel_after=1)
    job = AutopilotJob(lab, MODEL, Bounds(SLA, 1, 4, (), 4.0))
    job._cancel, reloads = cancel, []
    job._apply(decision, lab.served, settings_of(lab.served), reloads)
    assert [n for n, _, _ in lab.applied] == [2] and [n for _, n in reloads] == [2], (lab.applied, reloads)


def test_a_stepwise_add_stops_where_the_gpu_has_no_room_and_the_autopilot_goes_on_from_there(monkeypatch):
    full = "GPU 0: 1.0 GiB free, one more instance takes about 2.1 GiB"
    monkeypatch.setattr("app.autopilot.job.ADD_GAP_S", 0.001)
    monkeypatch.setattr("app.autopilot.job.gpu_room", lambda lab, model, served: full)  # after the first reload
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    lab = _StepLab(1)
    job = AutopilotJob(lab, MODEL, bounds, clock=lambda: T0 + 8)
    d = job.pilot.decide(fig(12.0, 8, seconds=3, offered=100, served=100), settings(1, 500), T0 + 8,
                         outlook=CROWD.outlook(8.0, later_s(bounds), 4.0))
    assert d.stepwise and d.knobs == {"instance_count": 4}, d
    reloads: list = []
    job._apply(d, lab.served, settings_of(lab.served), reloads)
    assert [n for n, _, _ in lab.applied] == [2] and [n for _, n in reloads] == [2], lab.applied
    assert lab.marked == [f"autopilot: the add stops at 2 instances: {full}"], lab.marked
    job.pilot.record(DecisionOutcome(APPLIED, t=T0 + 8.5, instances=2))
    # the count it serves is the one it knows: no stop for "a change outside the autopilot"
    later = job.pilot.decide(fig(12.0, 14, seconds=3, offered=100, served=100), settings(2, 500), T0 + 14,
                             outlook=CROWD.outlook(14.0, later_s(bounds), 4.0))
    assert later.kind != "stop", later.reason


def _job_on(lab, clock_t: float) -> tuple[AutopilotJob, AutopilotProgress]:
    bounds = Bounds(SLA, 1, 4, (), 4.0)
    job = AutopilotJob(lab, MODEL, bounds, window_s=3.0, clock=lambda: clock_t,
                       forecast=ForecastClock(CROWD, lambda: T0))
    return job, AutopilotProgress(1, MODEL, bounds, T0)


def test_a_window_that_adds_ahead_records_every_reload_shows_the_count_and_replays(monkeypatch):
    monkeypatch.setattr("app.autopilot.job.ADD_GAP_S", 0.001)
    lab = _StepLab(1)
    job, state = _job_on(lab, T0 + 8)
    d = job._once(T0 + 8, T0, job.records, state)
    assert d.kind == "add" and d.stepwise and d.knobs == {"instance_count": 4}, d
    rec = job.records[-1]
    assert [n for _, n in rec["reloads"]] == [2, 3, 4] and "applied_t" in rec, rec
    assert [n for n, _, _ in lab.applied] == [2, 3, 4] and state.serving["instances"] == 4, (lab.applied, state)
    assert served_counts(rec) == [(t, n) for t, n in rec["reloads"]]
    again = replay(job.records, job.bounds, settings(1, 500))
    assert [(a.kind, a.reason, a.knobs) for a in again] == [(d.kind, d.reason, d.knobs)]


def test_a_refused_second_reload_stops_it_with_the_first_serving_and_shown(monkeypatch):
    monkeypatch.setattr("app.autopilot.job.ADD_GAP_S", 0.001)
    lab = _StepLab(1, refuse_at=2)
    job, state = _job_on(lab, T0 + 8)
    d = job._once(T0 + 8, T0, job.records, state)
    assert job.pilot.stopped.startswith("the lab refused the change (the forecast (yesterday) expects"), \
        job.pilot.stopped
    assert "instance 3 failed to load" in job.pilot.stopped and d.kind == "stop", d
    rec = job.records[-1]
    assert [n for _, n in rec["reloads"]] == [2] and "applied_t" not in rec, rec
    assert state.serving["instances"] == 2 and settings_of(lab.served).instance_groups[0].count == 2, state
    assert [c[1] for c in served_counts(rec)] == [2]


# --- the GPU room it reads: the GPU panel's own view ------------------------------------------------------------------
GIB = 2**30


def gpu_text(used_gib: float, total_gib: float = 16.0) -> str:
    """Return what a GPU Triton's /metrics says of its one GPU's memory."""
    return ("# TYPE nv_gpu_memory_used_bytes gauge\n"
            f'nv_gpu_memory_used_bytes{{gpu_uuid="GPU-0"}} {used_gib * GIB:.0f}\n'
            "# TYPE nv_gpu_memory_total_bytes gauge\n"
            f'nv_gpu_memory_total_bytes{{gpu_uuid="GPU-0"}} {total_gib * GIB:.0f}\n')


class _GpuLab:
    """A lab's gpu_view as app.lab.root.Lab makes it: the GPUs of a /metrics text, memory learnt per count."""

    def __init__(self) -> None:
        self.text, self.memory = "", GpuMemory()

    def gpu_view(self, model: str):
        gpus = gpus_of(self.text)
        return self.memory.view(model, gpus, self.instances) if gpus else None


def on_gpu(count: int) -> ModelSettings:
    return ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(count=count, kind=Kind.GPU),))


def test_the_gpu_room_is_learnt_from_two_counts_and_says_when_one_more_does_not_fit():
    lab = _GpuLab()
    lab.text, lab.instances = gpu_text(used_gib=6.0), 1  # 1 instance: 6 GiB used of 16
    assert gpu_room(lab, "m", on_gpu(1)) == ""  # one count seen: the size of an instance is not known yet
    lab.text, lab.instances = gpu_text(used_gib=11.0), 2  # 2 instances: 5 GiB each, 5 GiB free — one more fits
    assert gpu_room(lab, "m", on_gpu(2)) == ""
    lab.text = gpu_text(used_gib=13.0)  # something else took 2 GiB: 3 GiB free for a 5-7 GiB instance
    words = gpu_room(lab, "m", on_gpu(2))
    assert "one more instance needs about" in words and "it would not load" in words, words


def test_a_cpu_model_or_a_server_without_gpus_has_room(fake):
    cpu = ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(count=2, kind=Kind.CPU),))
    full = GpuView((), 2, (1, 2), 5.0 * GIB, "one more instance needs about 5.00 GiB of GPU memory")
    fake.set_gpus(full)
    assert gpu_room(fake, "gpu_sim", cpu) == ""  # not on GPUs: no claim
    assert gpu_room(fake, "gpu_sim", on_gpu(2)) == full.warning
    fake.set_gpus(None)  # a CPU server reports no GPU
    assert gpu_room(fake, "gpu_sim", on_gpu(2)) == ""
    fake.set_gpus(full)
    fake.set_down()  # nothing answers: no claim
    assert gpu_room(fake, "gpu_sim", on_gpu(2)) == ""


# --- on a lab: the job's own stop -------------------------------------------------------------------------------------
def test_someone_elses_change_stops_it_says_why_and_keeps_the_study(fake):
    """An operator's Apply while it runs: it stops itself, marks why, and the study says so (interrupted)."""
    current = fake.served_config(MODEL)
    fake.apply(MODEL, set_settings(current, apply_knobs(settings_of(current), {"instance_count": 2})), "test: start")
    fake.start_traffic(build_spec(TrafficForm(model=MODEL, mode="open", rate=50, duration_s=120)), ran_s=10)
    bounds = Bounds(sla_p99_ms=500.0, min_instances=1, max_instances=3, delays_us=(), dwell_s=3.0)
    fake.start_job(AutopilotJob(fake, MODEL, bounds, window_s=1.0, period_s=0.5))
    wait_until(lambda: fake.job().progress is not None and fake.job().progress.windows >= 1, 10, "a judged window")
    current = fake.served_config(MODEL)
    fake.apply(MODEL, set_settings(current, apply_knobs(settings_of(current), {"instance_count": 3})), "operator")
    assert fake.wait_job(10), "the autopilot did not stop"
    result = fake.job().result
    assert "the config changed outside the autopilot (instances 2 → 3" in result.stopped, result.stopped
    study = fake.study(result.study_id)
    assert study.kind == "autopilot" and study.status == INTERRUPTED, study
    assert study.note.startswith("stopped: the config changed"), study.note
    assert any(m.text.startswith("autopilot stopped: the config changed") for m in fake.markers(MODEL))
    assert settings_of(fake.served_config(MODEL)).instance_groups[0].count == 3  # the operator's change stays


def test_an_ensemble_is_refused_before_a_study_is_stored_or_a_trace_plays():
    """An ensemble has no instances or queue of its own (Triton refuses an instance_group on one): every change the
    autopilot could make would be refused, so it says so at the start, on the page's job and on a played trace."""
    from app.autopilot.steered import play_steered  # noqa: PLC0415
    from app.config.model_config import parse_config  # noqa: PLC0415
    from tests.third_party import SOURCE  # noqa: PLC0415

    lab = _StepLab(1)
    lab.served = parse_config((SOURCE / "pipeline" / "config.pbtxt").read_text())
    lab.add_study = lab.start_traffic = None  # called, they would fail the test: nothing may be stored or sent
    words = "the autopilot steers a model's instances and queue delay; pipeline is an ensemble"
    job = AutopilotJob(lab, "pipeline", Bounds(SLA, 1, 4, (), 4.0))
    with pytest.raises(ValueError, match=words):
        job.run(lambda progress: None, threading.Event())
    with pytest.raises(ValueError, match=words):
        play_steered(lab, "pipeline", Bounds(SLA, 1, 4, (), 4.0), _NoTrace(), SLA)
    assert not lab.applied and not lab.marked


class _NoTrace:
    """A trace load whose spec is all play_steered reads before it checks the model."""

    def spec(self, model, sla_ms, seed):
        return None

    def describe(self):
        return "no trace"


class _HotLab(_StepLab):
    """A model whose every window is over the SLA, with arrivals outrunning what it serves."""

    def measure(self, model, t0, t1, include_held=True):
        return fig(3 * SLA, t1 - T0, seconds=t1 - t0, offered=330, served=100)


def test_standing_advice_is_marked_once_a_minute_not_every_dwell_and_kept_every_window():
    lab = _HotLab(1)
    now = [T0 + 8]
    job = AutopilotJob(lab, MODEL, Bounds(SLA, 1, 4, (), 4.0), window_s=3.0, clock=lambda: now[0],
                       advisory=True, twin=False)
    state = AutopilotProgress(1, MODEL, job.bounds, T0)
    advised = 0
    for _ in range(24):  # two minutes, a window every 5 s: past the 4 s dwell each time
        d = job._once(now[0], T0, job.records, state)
        advised += bool(d is not None and d.changes)
        now[0] += 5.0
    assert not lab.applied  # advice applies nothing
    # the pace rules count advice as they count changes (max_per_minute)
    assert advised >= 6 and sum(bool(r.get("advised")) for r in job.records) == advised, advised
    # the same advice: a marker when first given and again a minute later, not one per dwell
    assert 2 <= len(lab.marked) <= 3 and all(m.startswith("autopilot advice") for m in lab.marked), lab.marked
