"""Closed loop (N in flight) and open loop (a schedule), both over the one request path."""
from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from random import Random

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass
from loadgen.client import RequestPath
from loadgen.pacer import LoopPacer
from loadgen.schedule import Schedule

_EARLY_S = 1e-6  # timers may fire this much before their time (clock resolution, float rounding)


class ClosedLoop:
    """Keep `concurrency` requests in flight: each worker sends the next when its last one ends."""

    def __init__(self, concurrency: int, picker: ClassPicker, path: RequestPath, bound: Bound,
                 rng: Random) -> None:
        self.concurrency, self.picker, self.path, self.bound, self.rng = concurrency, picker, path, bound, rng
        self._workers: dict[int, asyncio.Task] = {}

    async def run(self) -> None:
        """Run until the bound closes and every worker has finished its request."""
        self.resize(self.concurrency)
        await self.bound.closed.wait()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)

    def resize(self, concurrency: int) -> None:
        """Change the number of requests in flight; extra workers stop after their current request."""
        self.concurrency = max(0, int(concurrency))
        for i in range(self.concurrency):
            if i not in self._workers or self._workers[i].done():
                self._workers[i] = asyncio.get_running_loop().create_task(self._worker(i))

    async def _worker(self, index: int) -> None:
        path = self.path
        while index < self.concurrency and self.bound.take():
            cls = self.picker.pick()
            await path.send(cls.target, cls.pick(self.rng))


class OpenLoop:
    """Send each request at its scheduled time whatever is in flight; a missed slot is marked late."""

    def __init__(self, schedule: Schedule, choose: Callable[[object], PreparedClass], path: RequestPath,
                 bound: Bound, rng: Random, pacer: LoopPacer | None = None) -> None:
        self.schedule, self.choose, self.path, self.bound, self.rng = schedule, choose, path, bound, rng
        self.pacer = pacer or LoopPacer()
        self.in_flight: set[asyncio.Task] = set()

    async def run(self) -> None:
        """Follow the schedule until the bound closes or the schedule ends; then wait for answers."""
        path, schedule, bound = self.path, self.schedule, self.bound
        clock, t0 = path.clock, path.t0
        loop = asyncio.get_running_loop()
        stopper = loop.create_task(self._wake_on_close())
        try:
            while bound.is_open():
                due = schedule.peek()
                if due is None and not schedule.paused():
                    break  # every stream has ended (a trace without loop)
                if due is not None and t0 + due >= bound.deadline:
                    break
                await self.pacer.wait_until(math.inf if due is None else t0 + due)
                now = clock() - t0 + _EARLY_S
                while (due := schedule.peek()) is not None and due <= now and bound.take():
                    _, key = schedule.pop()
                    cls = self.choose(key)
                    task = loop.create_task(path.send(cls.target, cls.pick(self.rng), due))
                    self.in_flight.add(task)
                    task.add_done_callback(self.in_flight.discard)
        finally:
            stopper.cancel()
        await asyncio.gather(*list(self.in_flight), return_exceptions=True)

    def set_rate(self, key: object, rate: float) -> None:
        """Change one stream's rate from now on."""
        self.schedule.set_rate(key, rate, self.path.clock() - self.path.t0)
        self.pacer.wake()

    async def _wake_on_close(self) -> None:
        await self.bound.closed.wait()
        self.pacer.wake()
