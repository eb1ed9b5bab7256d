"""Triton's gRPC bidirectional stream on the event loop: one stream per connection-slot, requests multiplexed by id.

A slot owns a channel and one ModelStreamInfer call; a reader task hands each response to the request with its id
(`Pending`). Responses of a request given up on (timed out, cancelled) are dropped. A broken stream fails every
request it carried and is opened again for the next one.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
from tritonclient.grpc import service_pb2

from loadgen.triton_grpc.grpc_request import STREAM_METHOD, carries_data, is_final

_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]  # a slot's own connection, as each HTTP slot has its own
CONNECT_TIMEOUT_S = 5.0  # as the HTTP pool's
_READY, _FAILED = grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE


class Pending:
    """One request's answers so far: when its first data response came, how many came, and how it ended."""

    __slots__ = ("first", "responses", "end", "error", "kind", "done")

    def __init__(self, done: asyncio.Future) -> None:
        self.first: float | None = None  # clock time of the first data response
        self.responses = 0  # data responses (the empty final one is not counted)
        self.end: float | None = None  # clock time of the final response or of the failure
        self.error = ""  # the server's text, or what broke the stream
        self.kind = ""  # '' (answered), 'server' (an error response), 'connect' (no connection), 'connection' (broke)
        self.done = done

    def finish(self, at: float, kind: str = "", error: str = "") -> None:
        """End the request (once)."""
        if self.end is None:
            self.end, self.kind, self.error = at, kind, error
            if not self.done.done():
                self.done.set_result(None)


class StreamSlot:
    """One channel and one stream; write() sends a request, the reader task finishes its Pending."""

    def __init__(self, target: str, clock: Callable[[], float]) -> None:
        self.target, self.clock = target, clock
        self.pending: dict[str, Pending] = {}
        self._channel: grpc.aio.Channel | None = None
        self._call = None
        self._reader: asyncio.Task | None = None
        self._closing: set[asyncio.Task] = set()  # broken streams' channels being closed
        self._refusal = ""  # why the last connect failed
        self._writing = asyncio.Lock()  # one write at a time: gRPC's core fails a call given two sends at once

    async def write(self, request_id: str, request: bytes, pending: Pending) -> float:
        """Send a request (with its id) and register it; return when it went out (clock). A slot with no stream
        connects first, as the HTTP pool does: connecting is not the request's time; failing to is a connect error."""
        async with self._writing:
            if self._call is None and not await self._open():
                pending.finish(self.clock(), "connect", f"cannot connect to {self.target}: {self._refusal}")
                return pending.end
            self.pending[request_id] = pending
            sent = self.clock()
            try:
                await self._call.write(request)
            except (grpc.RpcError, asyncio.InvalidStateError, grpc.aio.UsageError) as exc:
                self._broken(_words(exc))
            return sent

    @property
    def idle(self) -> bool:
        """Return True when no request is out on this slot or being written (connecting included)."""
        return not self.pending and not self._writing.locked()

    def forget(self, request_id: str) -> None:
        """Stop waiting for a request's answers (its late responses are dropped)."""
        self.pending.pop(request_id, None)

    async def close(self) -> None:
        """Cancel the stream and close the channel."""
        call, channel, reader = self._call, self._channel, self._reader
        self._call = self._channel = self._reader = None
        if call is not None:
            call.cancel()
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        if channel is not None:
            await channel.close()
        await asyncio.gather(*self._closing, return_exceptions=True)

    async def _open(self) -> bool:
        """Connect a channel and start the stream on it; False (the channel closed) when no connection comes."""
        channel = grpc.aio.insecure_channel(self.target, options=_OPTIONS)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                state = channel.get_state(try_to_connect=True)
                while state is not _READY:
                    if state is _FAILED:  # refused: say so at once, as a refused TCP connect does
                        raise ConnectionRefusedError("the connection failed (is the gRPC port right?)")
                    await channel.wait_for_state_change(state)
                    state = channel.get_state(try_to_connect=True)
        except (TimeoutError, ConnectionRefusedError) as exc:
            self._refusal = str(exc) or f"no connection within {CONNECT_TIMEOUT_S:g} s"
            await channel.close()
            return False
        except asyncio.CancelledError:
            await channel.close()
            raise
        self._channel = channel
        answers = service_pb2.ModelStreamInferResponse.FromString  # requests arrive serialized (grpc_request)
        self._call = self._channel.stream_stream(STREAM_METHOD, request_serializer=None,
                                                 response_deserializer=answers)()
        self._reader = asyncio.get_running_loop().create_task(self._read(self._call))
        return True

    async def _read(self, call) -> None:
        try:
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    self._broken("the server ended the stream", call)
                    return
                self._take(response)
        except grpc.RpcError as exc:
            self._broken(_words(exc), call)
        except asyncio.CancelledError:
            if call is not self._call:  # close(): this reader's own end
                raise
            # gRPC cancels the whole call when a write is cancelled mid-way: its other requests must not hang
            self._broken("the stream was cancelled", call)

    def _take(self, response: service_pb2.ModelStreamInferResponse) -> None:
        answer = response.infer_response
        pending = self.pending.get(answer.id)
        if pending is None:
            return  # a request given up on
        now = self.clock()
        if response.error_message:
            del self.pending[answer.id]
            pending.finish(now, "server", response.error_message)
            return
        if carries_data(answer):
            pending.responses += 1
            if pending.first is None:
                pending.first = now
        if is_final(answer):
            del self.pending[answer.id]
            pending.finish(now)

    def _broken(self, words: str, call=None) -> None:
        """Fail every request the stream carried; the next write opens a new stream."""
        if call is not None and call is not self._call:
            return  # an old stream, already replaced
        now, pending, self.pending = self.clock(), self.pending, {}
        for p in pending.values():
            p.finish(now, "connection", words)
        old_call, old_channel = self._call, self._channel
        self._call = self._channel = self._reader = None
        if old_call is not None:
            old_call.cancel()
        if old_channel is not None:
            task = asyncio.get_running_loop().create_task(old_channel.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)


class StreamSlots:
    """The run's streams: the closed loop's worker i keeps slot i; the open loop takes an idle slot, opens one up to
    `limit`, or past it shares the least busy."""

    def __init__(self, target: str, clock: Callable[[], float], limit: int = 1024) -> None:
        self.target, self.clock, self.limit = target, clock, max(1, limit)
        self.fixed: dict[object, StreamSlot] = {}
        self.shared: list[StreamSlot] = []

    def slot(self, key: object | None = None) -> StreamSlot:
        """Return the slot of a closed-loop worker (key), or one for an open-loop request (key None)."""
        if key is not None:
            slot = self.fixed.get(key)
            if slot is None:
                slot = self.fixed[key] = StreamSlot(self.target, self.clock)
            return slot
        for slot in self.shared:
            if slot.idle:
                return slot
        if len(self.shared) < self.limit:
            self.shared.append(StreamSlot(self.target, self.clock))
            return self.shared[-1]
        return min(self.shared, key=lambda s: len(s.pending))

    async def close(self) -> None:
        """Close every stream."""
        slots = [*self.fixed.values(), *self.shared]
        self.fixed, self.shared = {}, []
        await asyncio.gather(*(s.close() for s in slots), return_exceptions=True)


def _words(exc: BaseException) -> str:
    if isinstance(exc, grpc.RpcError):
        return f"gRPC {exc.code().name}: {exc.details() or 'no detail'}"
    return str(exc) or type(exc).__name__
