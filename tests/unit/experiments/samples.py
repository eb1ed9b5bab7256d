"""Made-up sweeps and A/B comparisons for the chart, report and export tests.

Every figure here is invented (a toy capacity model and log-normal latencies), not measured; the
objects are the real ones (Point, SearchSpace, ABPlan, ABResult, meter.MeasuredWindow) so the code under test
reads them exactly as it reads a study.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from app.config.model_config import format_config, parse_config
from app.experiments.ab.comparison import ABPlan, ABResult, Arm
from app.experiments.ab.trial import Trial
from app.timeline.meter import MeasuredWindow, merged
from app.experiments.sweep.space import Choice, SearchSpace
from app.store.database import DONE, FAILED, Study
from app.experiments.sweep.sweeper import Point, SweepOptions
from app.metrics.window import DURATIONS, EXEC, INFER, SUCCESS, CounterDelta
from app.paths import MODEL_REPOSITORY
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec, Mode
from loadgen.specfile import spec_to_dict
from loadgen.stats import Bucket

BASE_CONFIG = (MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text()
CAPACITY = {"i1-d0": 400.0, "i1-d2000": 600.0, "i2-d0": 700.0, "i2-d2000": 900.0, "default": 500.0}  # req/s, invented
T0 = 1_780_000_000.0
ENV = {"server_version": "2.51.0", "server": "embedded tritonserver", "model": "gpu_sim", "cpu": "Made-up CPU",
       "cores": 2, "memory_gib": 7.8, "gpus": "none reported by the server", "platform": "Linux", "python": "3.11",
       "lab_commit": "abc1234", "recorded_at": "2026-05-28 12:00:00 UTC"}


def window(t0: float, seconds: float, rps: float, median_ms: float, rng: np.random.Generator, cls: str = "default",
           sla_ms: float = 50.0, batch: float = 4.0, late: float = 0.0) -> MeasuredWindow:
    """Return a window of `rps` successful requests a second with log-normal latencies around median_ms;
    the first `late` share of them sent 20 ms after their slot, the rest on time."""
    n = max(1, int(rps * seconds))
    bucket = Bucket()
    for i, latency in enumerate(rng.lognormal(math.log(median_ms / 1000), 0.3, n)):
        sent, behind = i * seconds / n, i < late * n
        r = Record(cls, "gpu_sim", 0, 0, sent - 0.020 * behind, sent, float(latency), Outcome.OK, "", 1, behind)
        bucket.count_sent(r)
        bucket.count_end(r, latency <= sla_ms / 1000)
    counters = {SUCCESS: n, INFER: n, EXEC: n / batch, DURATIONS["queue_us"]: n * median_ms * 400,
                DURATIONS["compute_infer_us"]: n * median_ms * 500, DURATIONS["request_us"]: n * median_ms * 1000}
    return MeasuredWindow(t0, t0 + seconds, {cls: bucket}, CounterDelta(seconds, counters, {}), {int(batch): int(n / batch)})


def sweep_space(**overrides) -> SearchSpace:
    """Return the made-up sweep's space: 1, 2 or 4 instances × delay 0 or 2000 µs, plus the default."""
    return SearchSpace(**{"instances": (1, 2, 4), "delays_us": (0, 2000), "loads": (1, 2, 4, 8, 16),
                          "p99_budget_ms": 50.0, "adaptive": False, **overrides})


def sweep_points(space: SearchSpace | None = None, seed: int = 3) -> list[Point]:
    """Return made-up points: throughput rises with load and flattens at each configuration's capacity.

    4 instances 'could not be applied' (failed points); one point (2 instances, delay 0 µs at 8) never settled.
    """
    space = space or sweep_space()
    rng = np.random.default_rng(seed)
    base = parse_config(BASE_CONFIG)
    points, t = [], T0
    for choice in space.choices():
        if choice.instances == 4:
            points.append(Point(choice, space.loads[0], FAILED, note="could not be applied: made-up refusal"))
            continue
        text = format_config(choice.config(base))
        for load in space.loads:
            cap = CAPACITY[choice.key]
            rps = cap * (1 - math.exp(-load * 180 / cap))  # 180 req/s per request in flight when idle
            windows = [window(t + 0.25 * k, 0.25, rps, 1000 * load / rps, rng, sla_ms=space.p99_budget_ms)
                       for k in range(3)]
            whole = merged(windows)
            stable = not (choice.key == "i2-d0" and load == 8)
            points.append(Point(choice, load, DONE, stable, 0.01 if stable else 0.2, whole.figures(),
                                [w.to_dict() for w in windows], "" if stable else "never settled", text,
                                id=len(points) + 1, t0=whole.t0, t1=whole.t1))
            t += 1.0
    return points


def sweep_study(space: SearchSpace, label: str = "instances × delay on gpu_sim") -> Study:
    """Return a finished made-up sweep study."""
    return Study("sweep", label, space.model, {"space": space.to_dict(),
                                               "options": dataclasses.asdict(SweepOptions(seed=11))},
                 T0, DONE, {"skipped": []}, BASE_CONFIG, ENV, T0 + 95.0, note="the starting config serves again",
                 id=7)


def ab_result(names: tuple[str, str] = ("start", "2 instances"), trials: int = 4, seed: int = 5,
              late: dict[tuple[str, int], float] | None = None) -> ABResult:
    """Return a made-up comparison: the second arm answers ~25 % more and with a lower p99, per-second windows;
    late: {(arm, trial): share of requests sent late}, none otherwise."""
    rng = np.random.default_rng(seed)
    two = format_config(Choice(instances=2, delay_us=2000).config(parse_config(BASE_CONFIG)))
    spec = spec_to_dict(LoadSpec(mode=Mode.CLOSED, concurrency=8, model="gpu_sim", seed=7))
    plan = ABPlan("gpu_sim", (Arm(names[0], BASE_CONFIG), Arm(names[1], two)), spec, trials=trials, trial_s=3.0)
    results: dict[str, dict[int, Trial]] = {}
    for trial in range(trials):
        for i, arm in enumerate(plan.order(trial)):
            rps = (400.0 if arm.name == names[0] else 500.0) * rng.normal(1, 0.02)
            t0 = T0 + 10 * (2 * trial + i)
            windows = [window(t0 + s, 1.0, rps, 8000 / rps, rng, late=(late or {}).get((arm.name, trial), 0.0))
                       for s in range(3)]
            results.setdefault(arm.name, {})[trial] = Trial(merged(windows).figures("gpu_sim"),
                                                            [w.to_dict() for w in windows], 100 + 2 * trial + i)
    return ABResult(9, plan, results, DONE, "", 30.0)


def ab_study(result: ABResult, label: str = "start vs 2 instances") -> Study:
    """Return the finished made-up study of a comparison."""
    return Study("ab", label, result.plan.model, {"plan": result.plan.to_dict()}, T0, DONE, {}, BASE_CONFIG, ENV,
                 T0 + 90.0, id=result.study_id)
