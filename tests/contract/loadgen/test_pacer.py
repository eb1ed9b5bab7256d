"""Pacers on the real monotonic clock and Linux's timerfd: never wake before the due time; wake() ends a wait early.
(How precisely a live open loop keeps its schedule is a measurement: bench/vs_perf_analyzer.py.)"""
from __future__ import annotations

import asyncio
import math
import time

from loadgen.pacer import LoopPacer, TimerfdPacer, best_pacer


def test_timerfd_pacer_never_wakes_early_and_can_be_woken():
    async def main():
        pacer = TimerfdPacer()
        try:
            for _ in range(5):
                due = time.monotonic() + 0.002
                await pacer.wait_until(due)
                assert time.monotonic() >= due
            loop = asyncio.get_running_loop()
            loop.call_later(0.01, pacer.wake)
            start = time.monotonic()
            await pacer.wait_until(math.inf)
            assert time.monotonic() - start < 5
        finally:
            pacer.close()

    asyncio.run(main())


def test_spin_pacer_returns_at_the_due_time():
    async def main():
        pacer = TimerfdPacer(spin_s=0.0005)
        try:
            due = time.monotonic() + 0.003
            await pacer.wait_until(due)
            assert time.monotonic() >= due
        finally:
            pacer.close()

    asyncio.run(main())


def test_best_pacer_on_linux():
    pacer = best_pacer()
    assert isinstance(pacer, LoopPacer)
    pacer.close()
