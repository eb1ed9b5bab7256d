"""A short probe that calibrates the twin: a few seconds of closed-loop traffic at a few levels of concurrency, so
the server forms small and large batches, each level noted as a window of its own (no config is changed)."""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.config.read import settings_of
from app.lab.jobs import FunctionJob
from app.lab.ports import StudyLab
from app.traffic.form import TrafficForm, build_spec
from app.twin.batcher import instance_count
from app.twin.calibration import Calibration
from loadgen.limits import LIMITS
from loadgen.spec import Mode
from loadgen.stats import ALL

LEVEL_S = 1.0  # each level's measured window, between two reads of the statistics API (exact edges)
WARM_S = 0.3  # each level's traffic before it: the queue filling at the level's concurrency
MAX_LEVEL = 64  # the most requests in flight a probe sends
# A host-bound model's open-loop levels, as shares of the answers per second its host allowed (the higher one well
# under its saturation: at 67 % text_len's tail was its overload's), each measured in OPEN_PARTS consecutive windows
# of OPEN_LEVEL times a closed level's length, the one whose clients' p99 is the median noted: a p99 of a host-bound
# open loop varies by a third from one second to the next (mlp at 4,700 req/s: 11-25 ms over ten 1 s windows), and
# one window of 2.25 s that caught a stall of the host (mlp at 5,042 req/s: outside p99 32.7 ms where the bench's
# windows at that rate measured 2-6 ms, 2026-12-07, run V) sent every host-bound p99 the twin predicted 3-4x high.
# The median guards against one stall, not against a host whose tail at that rate is unsteady throughout (text_len
# at 4,700 req/s: its 1.5 s windows read 2.5 to 75 ms within a minute, 2026-12-07; docs/MEASUREMENTS.md, runs W and X).
# Tried and not kept (docs/MEASUREMENTS.md, the twin): one window of 5 s, as long as bench/twin_accuracy's (two runs:
# 13 then 8 of 24 p99 within 20 % on mlp, 18 then 6 on text_len) — a longer window holds the stall too; three parts
# of 0.75 s, the median noted, while Triton's latency summaries (then on) stalled the host in every window.
OPEN_SHARES = (0.2, 0.5)
OPEN_LEVEL = 1.5
OPEN_PARTS = 3
AGAIN_LEVEL = 2.25  # the top level's second pass where the host is the limit, times a closed level's length
OPEN_WARM_S = 1.0  # an open loop's warm-up: its pacer's first second is not its steady state (text_len at 2,563
# req/s after 0.3 s: 1,912 answers/s, 58 ms outside the server on average, where later windows of the same rate
# kept up), as bench/twin_accuracy drops its first second too
START_S = 5.0  # at most, the wait for a level's traffic to start sending


@dataclass
class ProbeProgress:
    """What the page shows while a probe runs."""

    level: int = 0
    levels: int = 0
    concurrency: int = 0  # 0: the open-loop level
    study_id: int | None = None  # a probe stores no study


def levels(settings, most: int = MAX_LEVEL) -> list[int]:
    """Return the concurrencies a probe sends: one alone (batches of one), twice every instance's largest batch (the
    largest batches, and the host's limit where it has one), and two between, spaced evenly on a log scale (8 and
    23 on a model that batches to 32): the batch sizes the twin fits its curve to. With one between (8), gpu_sim's
    batches of 8 to 12 were never measured, and the curve fitted from 1-7 and 13-32 (the top level's times long
    with its clients' load on the host) made them 5-10 % long; two instances without a delay, batching to 8, were
    then predicted 9-11 % under their measured saturation. With a level at 23 in flight, sizes 7-14 were measured
    and the same fit was within 3 % (2026-12-07, /tmp/s13).

    Twice, as bench/twin_accuracy's saturation: with only as many in flight as the batches hold, a batch's clients
    are still sending while it runs, the server waits for them and no limit shows (text_len, a batch of 16: 8,600
    answers/s at 16 in flight, within what its executions allowed, so the twin saw no host limit and predicted
    19,000 where 32 in flight got 10,300, 2026-12-07)."""
    top = min(2 * max(1, settings.max_batch_size) * instance_count(settings), most)
    middle = max(2, round((top ** 0.5))) if top > 2 else top
    upper = round((middle * top) ** 0.5)
    return sorted({1, middle, upper, top})


def probe(lab: StudyLab, model: str, level_s: float = LEVEL_S, progress: Callable | None = None,
          cancel: threading.Event | None = None) -> Calibration | None:
    """Send closed-loop traffic to model at each level in turn, note each level's executions between a meter's
    exact edges with the twin, and return its calibration; the traffic that ran before runs again after (None: it
    learnt nothing). About 1.3 s a level (it was 3 s when each level waited for the poller's whole seconds); where
    the host, not the server, turns out to be the limit, the top level again for longer (2.6 s) and two levels of an
    open loop follow (5.6 s each: three windows, the median one noted)."""
    found = lab.traffic().spec if lab.traffic().running else None
    config = lab.served_config(model)
    settings = settings_of(config)
    spec = build_spec(TrafficForm(model=model, mode="closed", concurrency=1, duration_s=60.0), config)
    steps = levels(settings)
    state = ProbeProgress(levels=len(steps))
    lab.stop_traffic(f"traffic stopped: the twin's probe of {model} takes over")
    meter = lab.meter(model)

    def step(level_spec, length_s: float, what: str, parts: int = 1) -> bool:
        """Run one more level unless cancelled (the page shows it first); return whether it ran."""
        if cancel is not None and cancel.is_set():
            return False
        state.level += 1
        state.concurrency = level_spec.concurrency if level_spec.mode == Mode.CLOSED else 0
        if progress is not None:
            progress(state)
        _level(lab, meter, model, level_spec, length_s, cancel, what, parts)
        return True

    try:
        for concurrency in steps:
            if not step(replace(spec, concurrency=concurrency), level_s, f"{concurrency} in flight"):
                break
        ceiling = _ceiling(lab, model)
        # The host, not the server, is the limit: the clients' own time makes the tail, and an open loop's bursts
        # make a longer one than any closed loop (mlp: p99 5-11 ms at 1,000-4,500 req/s open, 1.8 and 4.7 ms
        # closed at 900 and 5,400), growing with the rate: two levels of an open loop show it.
        if ceiling is not None:
            state.levels += 1 + len(OPEN_SHARES)
            # The ceiling again, over 2.25 s (AGAIN_LEVEL): one second of it varies by a fifth and more from one
            # probe to the next (mlp: 6,700-11,500 answers/s, where 5 s at 128-256 in flight got 6,000-9,100).
            if step(replace(spec, concurrency=steps[-1]), AGAIN_LEVEL * level_s,
                    f"{steps[-1]} in flight again: the host's ceiling"):
                ceiling = _ceiling(lab, model) or ceiling
            for share in OPEN_SHARES:
                rate = max(1.0, min(LIMITS["rate"].high, round(share * ceiling[0])))
                open_spec = build_spec(TrafficForm(model=model, mode="open", rate=rate, duration_s=60.0), config)
                if not step(open_spec, OPEN_LEVEL * level_s, f"an open loop at {rate:,.0f} req/s", OPEN_PARTS):
                    break
    finally:
        meter.close()
        if found is not None:
            lab.start_traffic(found)
    return lab.calibration(model)


def _ceiling(lab: StudyLab, model: str) -> tuple[float, str] | None:
    """Return the host ceiling the twin's calibration of model shows now (None: none, or nothing learnt)."""
    found = lab.calibration(model)
    return found.host_ceiling if found is not None else None


def _level(lab: StudyLab, meter, model: str, spec, level_s: float, cancel: threading.Event | None,
           what: str, parts: int = 1) -> None:
    """Run one level: its traffic for its warm-up from the first request, then parts consecutive windows of level_s
    between exact edges; note with the twin the one whose clients' p99 is the median (the only one, for one part),
    with every part's p99 beside it (how far the tail at this load moves from one window to the next)."""
    warm = WARM_S if spec.mode == Mode.CLOSED else OPEN_WARM_S
    # it ends by itself should this level end early with an error
    lab.start_traffic(replace(spec, duration_s=START_S + warm + parts * level_s + 5.0))
    asked = time.time()
    while (lab.traffic().started_at is None and lab.traffic().running and time.time() < asked + START_S
           and not (cancel is not None and cancel.is_set())):
        meter.wait_until(time.time() + 0.02, cancel)  # the warm-up counts from the first request sent
    meter.wait_until((lab.traffic().started_at or asked) + warm, cancel)
    edges = [meter.edge()]
    meter.discard_before(edges[0].t)
    for part in range(1, parts + 1):
        meter.wait_until(edges[0].t + part * level_s, cancel)
        edges.append(meter.edge())
        if cancel is not None and cancel.is_set():
            break
    # Each part's figures only after the last edge: cutting a window takes the lab's CPU, which the host-bound parts
    # measured after it lost (their clients' p99 rose part by part: text_len 5.8, 9.4, 13.4 ms; mlp 4.2, 7.9,
    # 12.2 ms, 2026-12-07, run Z).
    cut = [(a, b, meter.window(a, b).figures(model)) for a, b in zip(edges, edges[1:])]
    lab.stop_traffic(f"traffic stop: probe level, {what}")
    start, end, figures = median_part(cut)
    p99s = tuple(p99 for _, _, f in cut if (p99 := f.row(ALL).p99_ms) is not None) if len(cut) > 1 else ()
    lab.learn_edges(model, start, end, figures, p99s)


def median_part(cut: list[tuple]) -> tuple:
    """Return the (start, end, figures) of the part whose clients' p99 is the median (the lower middle one of an
    even count; a part without a p99 counts as the highest)."""
    def p99(part) -> float:
        value = part[2].row(ALL).p99_ms
        return value if value is not None else math.inf
    ranked = sorted(cut, key=p99)
    return ranked[(len(ranked) - 1) // 2]


def probe_job(lab: StudyLab, model: str) -> FunctionJob:
    """Return the probe as the lab's background job (the page's Calibrate button)."""
    return FunctionJob("probe", f"the twin's probe of {model}", lambda progress, cancel: probe(
        lab, model, progress=progress, cancel=cancel))
