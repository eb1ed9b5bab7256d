"""The load generator in its own process: `python -m loadgen worker`, and the parent's end of it (WorkerProcess).

The dashboard's LoadController starts one worker and keeps it for its runs, so Streamlit's threads, which share
the dashboard's interpreter, cannot disturb the generator's pacing. Commands are JSON lines on the worker's stdin,
events JSON lines on its stdout:

                                                       <- {"ev": "ready"}  (once, imported and its threads up)
    -> {"op": "start", "url": URL, "spec": {...}}     <- {"ev": "started", "t0_epoch": T}
    -> {"op": "update", "rate": R, "concurrency": C}   <- {"ev": "records", "r": [[field, ...], ...]}  (each flush;
                                                          a failure's detail only when new for its kind, see encode)
    -> {"op": "stop"}                                  <- {"ev": "end", "elapsed_s": S, "error": null | "..."}

When its stdin closes (the dashboard is gone), the worker stops its run and exits.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from loadgen.child_env import child_environment
from loadgen.outcome import Outcome
from loadgen.records import Record, RecordBus, Subscriber
from loadgen.run import LoadRun
from loadgen.spec import LoadSpec
from loadgen.specfile import spec_from_dict, spec_to_dict

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]


SAME = 0  # a row's detail slot: the same text as the last one sent for its error kind


def encode(records: list[Record], sent: dict[str, str] | None = None) -> list[list]:
    """Return records as JSON-ready rows (Record's field order), cheap for a run whose requests all fail.

    A row has Record's first 11 fields, then only what it needs: the detail (SAME when it repeats the last text
    sent for its error kind: `sent`, kept by the caller across a run's batches), then first_s and responses of a
    streamed request.
    """
    sent = {} if sent is None else sent
    rows = []
    for r in records:
        row = [r.cls, r.model, r.priority, r.sequence_id, r.scheduled_s, r.sent_s, r.latency_s, r.outcome.value,
               r.error, r.attempt, r.late]
        streamed = r.first_s is not None or r.responses
        if r.detail or streamed:
            if r.detail and sent.get(r.error) == r.detail:
                row.append(SAME)
            else:
                row.append(r.detail)
                if r.detail:
                    sent[r.error] = r.detail
        if streamed:
            row += [r.first_s, r.responses]
        rows.append(row)
    return rows


def decode(rows: list[list], seen: dict[str, str] | None = None) -> list[Record]:
    """Return the records of encode()'s rows (`seen`: the texts decoded so far in the run, by error kind)."""
    seen = {} if seen is None else seen
    out = []
    for c, m, p, s, sch, sent, lat, o, e, a, late, *tail in rows:
        detail = tail[0] if tail else ""
        if not isinstance(detail, str):  # SAME
            detail = seen.get(e, "")
        elif detail:
            seen[e] = detail
        first_s, responses = (tail[1], tail[2]) if len(tail) >= 3 else (None, 0)
        out.append(Record(c, m, p, s, sch, sent, lat, Outcome(o), e, a, late, detail, first_s, responses))
    return out


# ---- the worker process ------------------------------------------------------------------------------------


class _Events:
    """Write events from any thread without blocking it: a queue and a writer thread own the pipe."""

    def __init__(self, out) -> None:
        self._out = out
        self._sent: dict[str, str] = {}  # the run's failure texts sent so far, by error kind (encode)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name="loadgen-events", daemon=True)
        self._thread.start()

    def send(self, event: dict) -> None:
        self._queue.put(event)

    def records(self, batch: list[Record]) -> None:
        self._queue.put(batch)  # encoded on the writer thread, not on the run's loop

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(10.0)

    def _write(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, dict) and item.get("ev") == "started":
                self._sent.clear()  # a new run: its reader starts with no texts (WorkerRun._seen)
            event = {"ev": "records", "r": encode(item, self._sent)} if isinstance(item, list) else item
            try:
                self._out.write(json.dumps(event, separators=(",", ":")) + "\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):  # the parent is gone: nothing more to tell
                return


def _update_fits(run: LoadRun, cmd: dict) -> bool:
    """Return whether an update's rate and concurrency fit the run's spec and the table of load bounds; a refused
    update is logged (stderr) and the run keeps its load."""
    changes = {k: cmd[k] for k in ("rate", "concurrency") if cmd.get(k) is not None}
    try:
        dataclasses.replace(run.spec, **changes)
    except (ValueError, TypeError) as exc:
        log.warning("update refused, the run keeps its load: %s", exc)
        return False
    return True


def worker_main() -> int:
    """Serve runs until stdin closes."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints go to stderr, never into the event stream
    sys.stdout = sys.stderr
    events = _Events(out)
    starts: queue.SimpleQueue = queue.SimpleQueue()
    current: list = [None, None]  # (loop, run) of the run going

    def command(line: str) -> None:
        cmd = json.loads(line)
        op, (loop, run) = cmd.get("op"), current
        if op == "start":
            try:  # the spec's own rules and the table of load bounds (loadgen.limits): outside them no run starts
                spec = spec_from_dict(cmd["spec"])
            except (ValueError, TypeError, ArithmeticError) as exc:
                events.send({"ev": "end", "elapsed_s": 0.0, "error": f"load refused: {exc}"})
                return
            loop = asyncio.new_event_loop()
            run = LoadRun(spec, cmd["url"], [events.records], grpc_url=cmd.get("grpc_url"),
                          on_start=lambda t0: events.send({"ev": "started", "t0_epoch": t0}))
            current[:] = [loop, run]
            starts.put((loop, run))
        elif op in ("update", "stop") and loop is not None and not loop.is_closed():
            if op == "update" and not _update_fits(run, cmd):
                return
            call = (lambda: run.update(cmd.get("rate"), cmd.get("concurrency"))) if op == "update" else run.stop
            try:
                loop.call_soon_threadsafe(call)
            except RuntimeError:  # that run has just ended
                pass

    def read_commands() -> None:
        ready.wait()  # "ready" goes out first: a command already waiting on stdin is answered after it
        for line in sys.stdin:
            if line.strip():
                try:
                    command(line)
                except (ValueError, KeyError, TypeError, ArithmeticError) as exc:
                    events.send({"ev": "end", "elapsed_s": 0.0, "error": f"bad command: {exc}"})
        loop, run = current
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(run.stop)
            except RuntimeError:
                pass
        starts.put(None)

    ready = threading.Event()
    threading.Thread(target=read_commands, name="loadgen-commands", daemon=True).start()
    events.send({"ev": "ready"})  # imported, its threads up: what it runs from here on is a run's
    ready.set()
    while (item := starts.get()) is not None:
        loop, run = item
        error = None
        try:
            loop.run_until_complete(run.run())
        except Exception as exc:  # noqa: BLE001 - reported to the parent in the end event
            if not isinstance(exc, (ValueError, OSError, RuntimeError)):  # a bug: its traceback on stderr
                log.exception("load run failed")
            error = f"{type(exc).__name__}: {exc}"
        finally:
            loop.close()
        events.send({"ev": "end", "elapsed_s": run.elapsed_s(), "error": error})
    events.close()
    return 0


# ---- the parent's end ---------------------------------------------------------------------------------------


class WorkerRun:
    """One run on a worker process, as the controller sees it (LoadRun's surface, plus is_alive and join)."""

    def __init__(self, worker: WorkerProcess, subscribers: list[Subscriber],
                 on_start: Callable[[float], None] | None) -> None:
        self._worker, self.on_start = worker, on_start
        self.bus = RecordBus(subscribers)
        self.proc: subprocess.Popen | None = None  # the worker process this run goes out from
        self.t0_epoch: float | None = None
        self.end_s: float | None = None
        self.error: str | None = None
        self._seen: dict[str, str] = {}  # the run's failure texts decoded so far, by error kind (decode)
        self._ended = threading.Event()

    def update(self, rate: float | None = None, concurrency: int | None = None) -> None:
        """Change the load now (open loop: rate; closed loop: concurrency)."""
        if not self._ended.is_set():
            self._worker.send({"op": "update", "rate": rate, "concurrency": concurrency})

    def stop(self) -> None:
        """Stop starting requests; the run ends after draining those in flight."""
        if not self._ended.is_set():
            self._worker.send({"op": "stop"})

    def elapsed_s(self) -> float:
        """Return seconds since the run started sending (0 before)."""
        if self.end_s is not None:
            return self.end_s
        return 0.0 if self.t0_epoch is None else max(0.0, time.time() - self.t0_epoch)

    def is_alive(self) -> bool:
        return not self._ended.is_set()

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait until the run has ended; return whether it has."""
        return self._ended.wait(timeout_s)

    def _event(self, event: dict) -> None:
        kind = event.get("ev")
        if kind == "records":
            self.bus.deliver(decode(event["r"], self._seen))
        elif kind == "started":
            self.t0_epoch = float(event["t0_epoch"])
            if self.on_start is not None:
                self.on_start(self.t0_epoch)
        elif kind == "end":
            self._end(float(event.get("elapsed_s") or 0.0), event.get("error"))

    def _end(self, elapsed_s: float, error: str | None) -> None:
        if self._ended.is_set():
            return
        self.end_s = elapsed_s if self.t0_epoch is not None else 0.0
        self.error = error
        self._ended.set()


class WorkerProcess:
    """Start `python -m loadgen worker` when first needed, run loads on it one at a time, read its events."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ready = threading.Event()  # the current process has said "ready"
        self._run: WorkerRun | None = None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start_run(self, url: str, spec: LoadSpec, subscribers: list[Subscriber],
                  on_start: Callable[[float], None] | None = None, grpc_url: str | None = None) -> WorkerRun:
        """Start a run on the worker (spawning it when there is none); return its handle at once."""
        with self._lock:
            if self._run is not None and self._run.is_alive():
                raise RuntimeError("a load run is already going on the worker")
            run = self._run = WorkerRun(self, subscribers, on_start)
            self._ensure()
            run.proc = self._proc
        self.send({"op": "start", "url": url, "grpc_url": grpc_url, "spec": spec_to_dict(spec)})
        return run

    def prestart(self) -> None:
        """Start the worker now (it imports while the dashboard starts), so the first run goes out at once."""
        with self._lock:
            self._ensure()

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until the worker process has imported and started its threads; False if none runs or it is late."""
        with self._lock:
            proc, ready = self._proc, self._ready
        return proc is not None and ready.wait(timeout_s) and proc.poll() is None

    def send(self, command: dict) -> None:
        """Write one command; a worker that has died ends the run with its exit status."""
        with self._lock:
            proc = self._proc
            try:
                proc.stdin.write(json.dumps(command) + "\n")
                proc.stdin.flush()
            except (AttributeError, BrokenPipeError, ValueError, OSError):
                pass  # the reader sees the process end and reports it

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the run going, end the worker (closing its stdin; killed by PID if it does not exit)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5.0)

    def _ensure(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()

    def _spawn(self) -> None:
        # The allowlisted environment, never the dashboard's: the worker needs no secret of the lab's.
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module (found from cwd), no user text
            [self.python, "-m", "loadgen", "worker"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1, env=child_environment(network=True))
        self._proc, self._ready = proc, threading.Event()
        threading.Thread(target=self._read, args=(proc, self._ready), name=f"loadgen-worker-{proc.pid}",
                         daemon=True).start()

    def _read(self, proc: subprocess.Popen, ready: threading.Event) -> None:
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("load worker %d wrote %r", proc.pid, line[:200])
                continue
            if event.get("ev") == "ready":
                ready.set()
                continue
            run = self._run
            if run is not None and run.proc is proc:
                run._event(event)  # noqa: SLF001 - the process's events belong to the run it carries
        code = proc.wait()
        run = self._run
        if run is not None and run.proc is proc and run.is_alive():  # not a later run on a new worker
            run._end(run.elapsed_s(), f"the load generator process {proc.pid} exited (status {code}) during the run")  # noqa: SLF001
