"""One run of a LoadSpec against a server: prepare, drive, bound, drain; records go to subscribers."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from random import Random
from typing import TYPE_CHECKING

from loadgen.bound import Bound
from loadgen.classes import ClassPicker, PreparedClass, make_target, prepare_class, prepare_classes
from loadgen.client import BlockingPath, RequestPath
from loadgen.drivers import ClosedLoop, OpenLoop
from loadgen.inputs.metadata import ModelInfo, fetch_model
from loadgen.pacer import LoopPacer, best_pacer
from loadgen.pool import ConnectionPool
from loadgen.records import RecordBus, Subscriber
from loadgen.schedule import Schedule, Stream
from loadgen.sequences import SequenceDriver, SequenceModel, correlation_ids
from loadgen.spec import ArrivalSpec, LoadSpec, Mode
from loadgen.watchdog import Watchdog

if TYPE_CHECKING:
    from loadgen.triton_grpc.grpc_path import StreamPath  # loaded by runs that drive a decoupled model (it imports grpc)

MAIN = "__main__"  # the schedule key of the shared open-loop stream
FLUSH_S = 0.05  # how often subscribers get the records so far (small batches: short pauses of the loop)


class LoadRun:
    """Drive one LoadSpec; update() and stop() may be called from the loop at any moment."""

    def __init__(self, spec: LoadSpec, url: str, subscribers: list[Subscriber] | None = None,
                 clock: Callable[[], float] | None = None, pacer: LoopPacer | None = None,
                 on_start: Callable[[float], None] | None = None, grpc_url: str | None = None) -> None:
        self.spec, self.url, self.on_start = spec, url.rstrip("/"), on_start
        self.grpc_url = grpc_url  # the server's gRPC host:port, for decoupled models (grpc_path.grpc_target)
        self.streams: StreamPath | None = None  # the gRPC stream path, when a class's model is decoupled
        self.bus = RecordBus(subscribers)
        self.clock, self.pacer = clock, pacer
        self.t0_epoch: float | None = None
        self.t0: float | None = None
        self.end_s: float | None = None
        self.closed: ClosedLoop | None = None
        self.open: OpenLoop | None = None
        self.bound: Bound | None = None
        self._stop_requested = False

    async def run(self) -> None:
        """Run until the bound, a stop, or the end of every schedule; flush every record."""
        loop = asyncio.get_running_loop()
        clock = self.clock = self.clock or loop.time
        self.bus.bind_thread()
        infos = await asyncio.to_thread(self._fetch_models)
        pool = ConnectionPool(self.url, self.spec.max_connections)
        self.t0, self.t0_epoch = clock(), time.time()
        if self.on_start is not None:
            self.on_start(self.t0_epoch)
        self.bound = bound = Bound(clock, self.spec.duration_s, self.spec.max_requests, start=self.t0)
        if self._stop_requested:
            bound.close()
        watchdog = Watchdog(self.spec.stop_when_all_fail_s, bound.close, lambda: clock() - self.t0)
        self.bus.subscribers.append(watchdog)  # a run whose requests all fail stops itself, raising Stopped below
        flusher = loop.create_task(self._flush_every(FLUSH_S))
        tasks = [loop.create_task(d) for d in self._drivers(infos, pool, bound)]
        try:
            await self._drive(tasks, bound)
        finally:
            flusher.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.end_s = clock() - self.t0
            pool.close()
            if self.streams is not None:
                await self.streams.slots.close()
            if self.open is not None:
                self.open.pacer.close()
            self.bus.flush()
        watchdog.check()

    def _drivers(self, infos: dict, pool: ConnectionPool, bound: Bound) -> list:
        """Build the closed loop, the open loop and the sequence drivers the spec asks for."""
        spec, rng = self.spec, Random(self.spec.seed)
        host = f"{pool.host}:{pool.port}"
        prepared = _prepare(spec, infos, host, rng)
        streamed = self.streams = self._stream_path(infos, rng, bound)
        path = RequestPath(pool, self.bus, self.clock, self.t0, Random(rng.random()), spec.late_after_ms / 1000.0,
                           bound.may_retry)
        shared = [tc for tc in spec.classes if tc.rate is None]
        picker = ClassPicker([prepared[tc.name] for tc in shared], [tc.share for tc in shared], Random(rng.random()))
        drivers = []
        if shared and spec.mode is Mode.CLOSED:
            threaded = BlockingPath(self.bus, self.clock, self.t0, Random(rng.random()), bound.may_retry)
            self.closed = ClosedLoop(spec.concurrency, picker, threaded, bound, Random(rng.random()),
                                     (pool.host, pool.port), streamed)
            drivers.append(self.closed.run())
        streams = [Stream(tc.name, tc.arrival or ArrivalSpec(), tc.rate, Random(rng.random()))
                   for tc in spec.classes if tc.rate is not None]
        if shared and spec.mode is Mode.OPEN:
            streams.insert(0, Stream(MAIN, spec.arrival, spec.rate, Random(rng.random())))
        if streams:
            choose = lambda key: picker.pick() if key == MAIN else prepared[key]  # noqa: E731
            pacer = self.pacer or best_pacer(spec.spin_us / 1e6)
            self.open = OpenLoop(Schedule(streams), choose, path, bound, Random(rng.random()), pacer, streamed)
            drivers.append(self.open.run())
        ids = correlation_ids()
        for seq in spec.sequences:
            target = make_target(seq.name, seq.model, seq.priority, seq.timeout_ms)
            model = SequenceModel(target, infos[seq.model], host)
            drivers.append(SequenceDriver(seq, model, path, bound, Random(rng.random()), ids).run())
        return drivers

    async def _drive(self, tasks: list[asyncio.Task], bound: Bound) -> None:
        def close_on_crash(task: asyncio.Task) -> None:
            if not task.cancelled() and task.exception() is not None:
                bound.close()

        for task in tasks:
            task.add_done_callback(close_on_crash)
        finished = asyncio.gather(*tasks, return_exceptions=True)
        closing = asyncio.ensure_future(bound.closed.wait())
        await asyncio.wait([finished, closing], return_when=asyncio.FIRST_COMPLETED)
        closing.cancel()
        bound.finish()  # no new requests; retries of requests out stay allowed until a stop or the deadline
        # Requests in flight get drain_s to answer; then they are cancelled (and recorded so).
        _, pending = await asyncio.wait(tasks, timeout=self.spec.drain_s)
        for task in pending:
            task.cancel()
        errors = [r for r in await finished if isinstance(r, Exception)]
        if errors:
            raise errors[0]

    def update(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the shared stream's rate (open loop) or the number in flight (closed loop) now."""
        if self.bound is None:  # still preparing: start with the new values
            changes = {k: v for k, v in (("rate", rate), ("concurrency", concurrency)) if v is not None}
            self.spec = dataclasses.replace(self.spec, **changes)
            return
        if concurrency is not None and self.closed is not None:
            self.closed.resize(concurrency)
        if rate is not None and self.open is not None and MAIN in self.open.schedule.streams:
            self.open.set_rate(MAIN, float(rate))

    def stop(self) -> None:
        """Stop starting requests; the run ends after draining those in flight."""
        self._stop_requested = True
        if self.bound is not None:
            self.bound.close()

    def elapsed_s(self) -> float:
        """Return seconds since the run started sending (0 before)."""
        if self.end_s is not None:
            return self.end_s
        return 0.0 if self.t0 is None else self.clock() - self.t0

    def _stream_path(self, infos: dict[str, ModelInfo], rng: Random, bound: Bound) -> StreamPath | None:
        """Return the gRPC stream path when a class's model is decoupled (grpc is imported only then), else None."""
        if not any(infos[self.spec.class_model(tc)].decoupled for tc in self.spec.classes):
            return None
        from loadgen.triton_grpc.grpc_path import StreamPath, grpc_target  # noqa: PLC0415
        from loadgen.triton_grpc.grpc_stream import StreamSlots  # noqa: PLC0415

        slots = StreamSlots(grpc_target(self.url, self.grpc_url), self.clock, self.spec.max_connections)
        return StreamPath(slots, self.bus, self.clock, self.t0, Random(rng.random()), self.spec.late_after_ms / 1000.0,
                          bound.may_retry)

    def _fetch_models(self) -> dict:
        models = {self.spec.class_model(tc) for tc in self.spec.classes} | {s.model for s in self.spec.sequences}
        infos = {m: fetch_model(self.url, m) for m in sorted(models)}
        _check_decoupled(self.spec, infos, self.url, self.grpc_url)
        return infos

    async def _flush_every(self, period_s: float) -> None:
        while True:
            await asyncio.sleep(period_s)
            self.bus.flush()


def _check_decoupled(spec: LoadSpec, infos: dict[str, ModelInfo], url: str, grpc_url: str | None) -> None:
    """Raise before the run when a decoupled model cannot be driven: in a sequence group (HTTP infer), or with no
    gRPC endpoint answering for it."""
    for seq in spec.sequences:
        if infos[seq.model].decoupled:
            raise ValueError(f"sequence group {seq.name}: {seq.model} is decoupled, and sequences go over HTTP "
                             "infer, which decoupled models refuse; drive it with a traffic class instead")
    decoupled = sorted(m for m, info in infos.items() if info.decoupled)
    if decoupled:
        from loadgen.triton_grpc.grpc_path import grpc_target, ready_over_grpc  # noqa: PLC0415

        target = grpc_target(url, grpc_url)
        for model in decoupled:
            ready_over_grpc(target, model)


def _prepare(spec: LoadSpec, infos: dict[str, ModelInfo], host: str, rng: Random) -> dict[str, PreparedClass]:
    """Prepare every class as prepare_classes does (the same seeds, in class order); a decoupled model's classes are
    encoded for the gRPC stream."""
    if not any(infos[spec.class_model(tc)].decoupled for tc in spec.classes):
        return prepare_classes(spec, infos, host, rng)
    from loadgen.triton_grpc.grpc_request import prepare_streamed  # noqa: PLC0415 - grpc is loaded only for decoupled models

    prepared = {}
    for tc in spec.classes:
        model = spec.class_model(tc)
        info, seed = infos[model], rng.randrange(1 << 30)
        prepared[tc.name] = (prepare_streamed(tc, model, info, seed) if info.decoupled
                             else prepare_class(tc, model, info, host, seed))
    return prepared
