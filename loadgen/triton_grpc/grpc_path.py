"""The request path of decoupled models: one request over Triton's gRPC stream, zero or more responses, one record.

Like loadgen.client's paths (outcomes, retries, lateness), but a record also carries the time to the first data
response (`first_s`) and how many came (`responses`); `latency_s` runs to the final response. The open loop awaits
send(); the closed loop's worker threads call send_blocking(), which runs the same coroutine on the run's loop on
the worker's own stream.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import threading
from collections.abc import Callable
from random import Random
from urllib.parse import urlparse

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from loadgen.classes import PreparedClass, Target
from loadgen.triton_grpc.grpc_request import StreamedClass, with_id
from loadgen.triton_grpc.grpc_stream import Pending, StreamSlots
from loadgen.inputs.metadata import ModelUnavailable
from loadgen.outcome import Outcome, cut, server_words, shed_kind
from loadgen.records import Record, RecordBus
from loadgen.retry import retried

DEFAULT_PORTS = (8000, 8001)  # Triton's own HTTP and gRPC ports: the one pairing safe to assume


def grpc_target(http_url: str, grpc_url: str | None = None, environ: dict | None = None) -> str:
    """Return host:port of the server's gRPC endpoint: grpc_url, else TRITON_GRPC_URL, else Triton's default pair
    (HTTP on 8000: gRPC on 8001); ValueError names the fix when none applies."""
    env = os.environ if environ is None else environ
    given = grpc_url or env.get("TRITON_GRPC_URL", "").strip()
    if given:
        return given.split("://", 1)[-1].rstrip("/")
    parsed = urlparse(http_url if "://" in http_url else f"http://{http_url}")
    if parsed.port == DEFAULT_PORTS[0]:
        return f"{parsed.hostname}:{DEFAULT_PORTS[1]}"
    raise ValueError(f"the gRPC address of the server at {http_url} is unknown (decoupled models are driven over "
                     "its gRPC stream): pass grpc_url to the load run, or set TRITON_GRPC_URL=HOST:PORT")


class StreamPath:
    """Send requests of decoupled models over the run's streams and emit one record per attempt."""

    def __init__(self, slots: StreamSlots, bus: RecordBus, clock: Callable[[], float], t0: float, rng: Random,
                 late_after_s: float = 0.001, may_retry: Callable[[], bool] = lambda: True) -> None:
        self.slots, self.bus, self.clock, self.t0, self.rng = slots, bus, clock, t0, rng
        self.late_after_s, self.may_retry = late_after_s, may_retry
        self.loop = asyncio.get_running_loop()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._blocking: set[concurrent.futures.Future] = set()
        self._aborted = False

    @staticmethod
    def carries(cls: PreparedClass) -> bool:
        """Return True when the class goes over this path (its model is decoupled)."""
        return isinstance(cls, StreamedClass)

    async def send(self, target: Target, data: bytes, scheduled_s: float | None = None, slot: object = None) -> Record:
        """Send one request (retrying per the target's policy); return the last attempt's record."""
        return await retried(lambda attempt, at: self._attempt(target, data, at, slot, attempt), target.retry,
                             self.may_retry, self.rng, scheduled_s)

    def send_blocking(self, slot: object, target: Target, data: bytes) -> Record | None:
        """From a worker thread: send on the worker's own stream, wait for the outcome (None once aborted)."""
        with self._lock:
            if self._aborted:
                return None
            future = asyncio.run_coroutine_threadsafe(self.send(target, data, None, slot), self.loop)
            self._blocking.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            return None
        finally:
            with self._lock:
                self._blocking.discard(future)

    def abort(self) -> None:
        """End the worker threads' requests now (recorded as cancelled); later send_blocking calls send nothing."""
        with self._lock:
            self._aborted = True
            futures = list(self._blocking)
        for future in futures:
            future.cancel()

    async def _attempt(self, target: Target, data: bytes, scheduled_s: float | None, slot_key: object,
                       attempt: int) -> Record:
        clock, t0 = self.clock, self.t0
        request_id = str(next(self._ids))
        slot = self.slots.slot(slot_key)
        pending = Pending(self.loop.create_future())
        sent = clock()  # until the slot says when it went out
        try:
            sent = await slot.write(request_id, with_id(data, request_id), pending)
            async with asyncio.timeout(target.timeout_s):
                await pending.done
        except asyncio.CancelledError:
            slot.forget(request_id)
            self._emit(target, scheduled_s, sent - t0, clock() - sent, pending, Outcome.CANCELLED, "cancelled",
                       "the run stopped before the final response", attempt)
            raise
        except TimeoutError:
            slot.forget(request_id)
            return self._emit(target, scheduled_s, sent - t0, clock() - sent, pending, Outcome.TIMEOUT,
                              "client_timeout", f"no final response within {target.timeout_s:g} s "
                              f"({pending.responses} response(s) by then)", attempt)
        if target.timeout_s is not None and pending.end - sent > target.timeout_s:
            # ended after the deadline though the loop saw it first (a busy host): the client had given up
            return self._emit(target, scheduled_s, sent - t0, pending.end - sent, pending, Outcome.TIMEOUT,
                              "client_timeout", f"the final response came after {target.timeout_s:g} s", attempt)
        outcome, error, detail = _classify(pending)
        return self._emit(target, scheduled_s, sent - t0, pending.end - sent, pending, outcome, error, detail, attempt)

    def _emit(self, target: Target, scheduled_s: float | None, sent: float, latency: float, pending: Pending,
              outcome: Outcome, error: str, detail: str, attempt: int) -> Record:
        if scheduled_s is None:
            scheduled_s = sent  # the closed loop: due when it went out
        first = None if pending.first is None else pending.first - sent - self.t0
        late = attempt == 1 and sent - scheduled_s > self.late_after_s
        record = Record(target.cls, target.model, target.priority, 0, scheduled_s, sent, latency, outcome, error,
                        attempt, late, detail, first, pending.responses)
        self.bus.emit(record)
        return record


def _classify(pending: Pending) -> tuple[Outcome, str, str]:
    """Return (outcome, error kind, detail) of a request that ended: answered, refused by the server, or cut off."""
    if not pending.kind:
        return Outcome.OK, "", ""
    if pending.kind != "server":
        return Outcome.ERROR, pending.kind, cut(pending.error)
    shed = shed_kind(pending.error)
    return (Outcome.REJECTED if shed else Outcome.ERROR), shed or "server_error", server_words(pending.error)


def ready_over_grpc(target: str, model: str, timeout_s: float = 5.0) -> None:
    """Raise ModelUnavailable unless the gRPC endpoint at target says the model is ready (the stream's address is
    checked before a run, not by its first failures)."""
    try:
        with grpc.insecure_channel(target) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            ready = stub.ModelReady(service_pb2.ModelReadyRequest(name=model), timeout=timeout_s).ready
    except grpc.RpcError as exc:
        raise ModelUnavailable(f"gRPC {target}: {exc.code().name}: {exc.details()} ({model} is decoupled: its "
                               "requests go over the gRPC stream; check the server's gRPC address)") from None
    if not ready:
        raise ModelUnavailable(f"gRPC {target}: {model} is not ready")
