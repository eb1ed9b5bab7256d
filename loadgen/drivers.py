"""Closed loop (N in flight, worker threads) and open loop (a schedule on the event loop), both over the one
request path (loadgen.client), or the gRPC stream path for classes of decoupled models (loadgen.triton_grpc.grpc_path)."""
from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from random import Random
from typing import TYPE_CHECKING

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass
from loadgen.client import BlockingPath, RequestPath
from loadgen.connection import BlockingConnection
from loadgen.pacer import LoopPacer
from loadgen.schedule import Schedule

if TYPE_CHECKING:
    from loadgen.triton_grpc.grpc_path import StreamPath  # imported by runs that drive a decoupled model (it loads grpc)

_EARLY_S = 1e-6  # timers may fire this much before their time (clock resolution, float rounding)


class ClosedLoop:
    """Keep `concurrency` requests in flight: each worker thread sends the next when its last one ends.

    Threads with blocking connections, as perf_analyzer's workers: an answer wakes only the worker waiting for
    it, so on a busy machine a late wake-up delays one request instead of every request the event loop holds
    (bench/vs_perf_analyzer.py --busy measures it). Records go to the path's bus; the run's loop delivers them.
    """

    def __init__(self, concurrency: int, picker: ClassPicker, path: BlockingPath, bound: Bound, rng: Random,
                 address: tuple[str, int], streamed: StreamPath | None = None) -> None:
        self.concurrency, self.picker, self.path, self.bound, self.rng = concurrency, picker, path, bound, rng
        self.address = address
        self.streamed = streamed  # decoupled models' classes: worker i sends them on stream i (loadgen.triton_grpc.grpc_path)
        self._lock = threading.Lock()
        self._workers: dict[int, threading.Thread] = {}
        self._conns: set[BlockingConnection] = set()
        self._error: BaseException | None = None

    async def run(self) -> None:
        """Run until the bound closes and every worker has finished its request (cancelled: abort them)."""
        self.resize(self.concurrency)
        try:
            await self.bound.closed.wait()
            await asyncio.to_thread(self._join)
        except asyncio.CancelledError:
            self.abort()
            await asyncio.to_thread(self._join)  # aborted, they end at once: their records are in before the flush
            raise
        if self._error is not None:
            raise self._error

    def resize(self, concurrency: int) -> None:
        """Change the number of requests in flight; extra workers stop after their current request."""
        with self._lock:
            self.concurrency = max(0, int(concurrency))
            for i in range(self.concurrency):
                if i not in self._workers:
                    worker = threading.Thread(target=self._work, args=(i,), name=f"loadgen-{i}", daemon=True)
                    self._workers[i] = worker
                    worker.start()

    def abort(self) -> None:
        """End the requests in flight now (recorded as cancelled); workers then stop."""
        self.path.aborted.set()
        self.bound.close()
        if self.streamed is not None:
            self.streamed.abort()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            conn.abort()

    def _work(self, index: int) -> None:
        conn = BlockingConnection(*self.address)
        with self._lock:
            self._conns.add(conn)
        try:
            path, picker, rng, bound, streamed = self.path, self.picker, self.rng, self.bound, self.streamed
            while self._stays(index) and bound.take():
                cls = picker.pick()
                if streamed is not None and streamed.carries(cls):
                    streamed.send_blocking(index, cls.target, cls.pick(rng))
                else:
                    path.send(conn, cls.target, cls.pick(rng))
        except BaseException as exc:  # noqa: BLE001 - a worker's bug ends the run and is raised by run()
            self._error = exc
            self.bound.close()
        finally:
            conn.close()
            with self._lock:
                self._conns.discard(conn)
                if self._workers.get(index) is threading.current_thread():
                    del self._workers[index]

    def _stays(self, index: int) -> bool:
        with self._lock:  # leaving and giving up the slot at once: a resize back up starts a new worker
            if index < self.concurrency:
                return True
            del self._workers[index]
            return False

    def _join(self) -> None:
        while True:
            with self._lock:
                workers = list(self._workers.values())
            if not workers:
                return
            for worker in workers:
                worker.join()


class OpenLoop:
    """Send each request at its scheduled time whatever is in flight; a missed slot is marked late (and sent, also
    past the deadline when it was due before it)."""

    def __init__(self, schedule: Schedule, choose: Callable[[object], PreparedClass], path: RequestPath,
                 bound: Bound, rng: Random, pacer: LoopPacer | None = None, streamed: StreamPath | None = None) -> None:
        self.schedule, self.choose, self.path, self.bound, self.rng = schedule, choose, path, bound, rng
        self.streamed = streamed  # decoupled models' classes go over the gRPC stream (loadgen.triton_grpc.grpc_path)
        self.pacer = pacer or LoopPacer()
        self.in_flight: set[asyncio.Task] = set()

    async def run(self) -> None:
        """Follow the schedule until the bound closes or the schedule ends; then wait for answers."""
        path, schedule, bound, streamed = self.path, self.schedule, self.bound, self.streamed
        clock, t0 = path.clock, path.t0
        loop = asyncio.get_running_loop()
        stopper = loop.create_task(self._wake_on_close())
        try:
            while bound.sends_due():
                due = schedule.peek()
                if due is None and (not schedule.paused() or not bound.is_open()):
                    break  # every stream has ended (a trace without loop), or paused at the deadline
                if due is not None and t0 + due >= bound.deadline:
                    break
                await self.pacer.wait_until(math.inf if due is None else t0 + due)
                now = clock() - t0 + _EARLY_S
                while (due := schedule.peek()) is not None and due <= now and bound.take_due(t0 + due):
                    _, key = schedule.pop()
                    cls = self.choose(key)
                    send = streamed.send if streamed is not None and streamed.carries(cls) else path.send
                    task = loop.create_task(send(cls.target, cls.pick(self.rng), due))
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
