"""Streaming generations over Triton's HTTP generate_stream endpoint (server-sent events), closed loop.

Each request posts {"LENGTH": n} and expects n events `data: {"TOKEN": i, ...}` with i = 0..n-1 in order
(token_sim's contract). One StreamRecord per request; stream_figures summarises a window of them.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from random import Random

import httpx
import numpy as np

from loadgen.retry import CONNECT_PAUSE_S
from loadgen.inputs.shapes import LengthSpec

LENGTH_INPUT, TOKEN_OUTPUT = "LENGTH", "TOKEN"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamSpec:
    """A closed loop of streaming generations: `concurrency` in flight, each asking for a drawn length."""

    model: str = "token_sim"
    concurrency: int = 8
    lengths: LengthSpec = field(default_factory=lambda: LengthSpec("uniform", low=4, high=64))
    seed: int = 0
    timeout_s: float = 30.0  # one whole generation, first byte to last token

    def __post_init__(self):
        if self.concurrency < 1 or self.timeout_s <= 0:
            raise ValueError("a stream spec needs concurrency >= 1 and timeout_s > 0")
        from loadgen.spec_limits import check_stream  # noqa: PLC0415 - the one table of load bounds

        check_stream(self)


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """One generation; times are seconds since the run started, first_token_s is None before any token."""

    sent_s: float
    first_token_s: float | None
    done_s: float
    tokens: int  # tokens received, complete and in order
    expected: int  # the LENGTH asked for
    error: str = ""  # what went wrong, '' when ok

    @property
    def ok(self) -> bool:
        return not self.error


Sink = Callable[[StreamRecord], None]


class StreamRunner:
    """Own one background thread running the closed loop on asyncio + httpx; start() and stop() it."""

    def __init__(self, spec: StreamSpec, url: str, sinks: Sequence[Sink] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.spec, self.sinks, self.clock = spec, list(sinks), clock
        self.endpoint = f"{url.rstrip('/')}/v2/models/{spec.model}/generate_stream"
        self.t0 = 0.0
        self._records: list[StreamRecord] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._halt: asyncio.Event | None = None
        self._started = threading.Event()

    def start(self) -> StreamRunner:
        """Start the loop in a background thread; return once it runs."""
        if self._thread is not None:
            raise RuntimeError("a StreamRunner starts once")
        self.t0 = self.clock()
        self._thread = threading.Thread(target=self._serve, name="stream-runner", daemon=True)
        self._thread.start()
        self._started.wait()
        return self

    def stop(self, timeout_s: float = 10.0) -> list[StreamRecord]:
        """Stop the loop (generations still streaming are cut off and not recorded); return every record."""
        if self._thread is not None and self._thread.is_alive() and self._halt is not None:
            self._loop.call_soon_threadsafe(self._halt.set)
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise RuntimeError(f"the stream runner did not stop within {timeout_s:g} s")
        return self.records()

    def run_for(self, duration_s: float, stop: threading.Event | None = None) -> list[StreamRecord]:
        """Start, run for duration_s or until stop is set, stop; return every record."""
        self.start()
        try:
            (stop or threading.Event()).wait(duration_s)
        finally:
            records = self.stop()
        return records

    def records(self) -> list[StreamRecord]:
        """Return a copy of the records so far."""
        with self._lock:
            return list(self._records)

    def now_s(self) -> float:
        """Return seconds since the run started, the records' time base."""
        return self.clock() - self.t0

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._started.set()  # start() returns even when the loop could not begin

    async def _main(self) -> None:
        self._loop, self._halt = asyncio.get_running_loop(), asyncio.Event()
        n = self.spec.concurrency
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(limits=limits, timeout=self.spec.timeout_s, **_plain(self.endpoint)) as client:
            workers = [asyncio.create_task(self._worker(client, Random(f"{self.spec.seed}:{i}"))) for i in range(n)]
            self._started.set()
            await self._halt.wait()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _worker(self, client: httpx.AsyncClient, rng: Random) -> None:
        while True:
            record = await self._generate(client, self.spec.lengths.sample(rng))
            with self._lock:
                self._records.append(record)
            for sink in self.sinks:
                try:
                    sink(record)
                except Exception:  # noqa: BLE001 - a sink's bug must not stop the load
                    log.exception("stream sink %r failed", sink)
            if record.error.startswith("ConnectError"):
                await asyncio.sleep(CONNECT_PAUSE_S)

    async def _generate(self, client: httpx.AsyncClient, length: int) -> StreamRecord:
        sent, check = self.now_s(), TokenCheck(length, self.now_s)
        try:
            async with asyncio.timeout(self.spec.timeout_s):
                async with client.stream("POST", self.endpoint, json={LENGTH_INPUT: length}) as resp:
                    if not _is_stream(resp):
                        check.fail(f"HTTP {resp.status_code}: {_message(await resp.aread())}")
                    else:
                        async for line in resp.aiter_lines():
                            if not check.feed(line):
                                break
        except TimeoutError:
            check.fail(f"the generation did not end within {self.spec.timeout_s:g} s")
        except (httpx.HTTPError, httpx.StreamError, ValueError) as exc:
            check.fail(f"{type(exc).__name__}: {str(exc) or 'no detail'}")
        return check.record(sent, self.now_s())


class TokenCheck:
    """Read one generation's event stream: count tokens, demand them complete and in order, keep the first error."""

    def __init__(self, length: int, now_s: Callable[[], float]) -> None:
        self.length, self.now_s = length, now_s
        self.tokens, self.first_token_s, self.error = 0, None, ""

    def feed(self, line: str) -> bool:
        """Take one line of the stream (`data: {...}` lines count); return False once it went wrong."""
        if not line.startswith("data:"):
            return True
        event = json.loads(line[5:])
        if "error" in event:
            return self.fail(str(event["error"]))
        if event.get(TOKEN_OUTPUT) != self.tokens:
            return self.fail(f"token {event.get(TOKEN_OUTPUT)!r} arrived in place {self.tokens}")
        if self.first_token_s is None:
            self.first_token_s = self.now_s()
        self.tokens += 1
        return True

    def fail(self, error: str) -> bool:
        """Keep the first error; return False."""
        self.error = self.error or error
        return False

    def record(self, sent_s: float, done_s: float) -> StreamRecord:
        """Return the generation's record; a stream that ended early is an error."""
        if self.tokens != self.length:
            self.fail(f"the stream ended after {self.tokens} of {self.length} tokens")
        return StreamRecord(sent_s, self.first_token_s, done_s, self.tokens, self.length, self.error)


def generate_once(url: str, model: str, length: int, timeout_s: float = 15.0) -> StreamRecord:
    """Stream one generation synchronously (a smoke check); times are seconds since it was sent."""
    t0 = time.monotonic()

    def now_s() -> float:
        return time.monotonic() - t0

    check = TokenCheck(length, now_s)
    endpoint = f"{url.rstrip('/')}/v2/models/{model}/generate_stream"
    try:
        with (httpx.Client(timeout=timeout_s, **_plain(endpoint)) as client,
              client.stream("POST", endpoint, json={LENGTH_INPUT: length}) as resp):
            if not _is_stream(resp):
                check.fail(f"HTTP {resp.status_code}: {_message(resp.read())}")
            else:
                for line in resp.iter_lines():
                    if not check.feed(line) or now_s() > timeout_s:
                        break
    except (httpx.HTTPError, httpx.StreamError, ValueError) as exc:
        check.fail(f"{type(exc).__name__}: {str(exc) or 'no detail'}")
    return check.record(0.0, now_s())


def _plain(url: str) -> dict:
    """Client options: no proxy from the environment; no CA bundle to load (40 ms) for plain http."""
    return {"trust_env": False, "verify": not url.startswith("http://")}


def _is_stream(resp: httpx.Response) -> bool:
    return resp.headers.get("content-type", "").startswith("text/event-stream")


def _message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body[:300].decode(errors="replace") or "no body"


def stream_figures(records: Iterable[StreamRecord], t0: float, t1: float) -> dict:
    """Return the figures of the requests that finished in [t0, t1) (seconds since the run started).

    requests_per_s: requests that finished OK in the window ÷ window seconds. tokens_per_s: every token of
    those OK requests (also the ones streamed before t0) ÷ window seconds; failed requests' tokens are not
    counted. Percentiles (numpy's linear interpolation) come from the OK requests' own samples: ttft (sent to
    first token), e2e (sent to the end of the stream), tpot (first token to the end ÷ the tokens after the
    first; requests of one token have none). failures: requests that finished in the window with an error; n: all of them.
    """
    window = [r for r in records if t0 <= r.done_s < t1]
    good = [r for r in window if r.ok]
    seconds = t1 - t0
    ttft = [r.first_token_s - r.sent_s for r in good]
    e2e = [r.done_s - r.sent_s for r in good]
    tpot = [(r.done_s - r.first_token_s) / (r.tokens - 1) for r in good if r.tokens > 1]
    return {
        "window_s": seconds,
        "n": len(window),
        "failures": len(window) - len(good),
        "requests_per_s": len(good) / seconds if seconds > 0 else 0.0,
        "tokens_per_s": sum(r.tokens for r in good) / seconds if seconds > 0 else 0.0,
        "ttft_p50_ms": _percentile_ms(ttft, 50),
        "ttft_p99_ms": _percentile_ms(ttft, 99),
        "e2e_p50_ms": _percentile_ms(e2e, 50),
        "e2e_p99_ms": _percentile_ms(e2e, 99),
        "tpot_p50_ms": _percentile_ms(tpot, 50),
    }


def _percentile_ms(samples: list[float], q: float) -> float | None:
    return float(np.percentile(samples, q)) * 1000.0 if samples else None
