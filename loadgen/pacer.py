"""Wait until a moment on the monotonic clock: the event loop's timer, or a precise Linux timerfd."""
from __future__ import annotations

import asyncio
import ctypes
import math
import os
import sys
import time


class LoopPacer:
    """Wait with the event loop's own timer (millisecond wake-ups; works with any loop clock)."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future | None = None

    async def wait_until(self, when: float) -> None:
        """Return at `when` (loop time) or earlier if woken."""
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        handle = loop.call_at(when, _resolve, waiter) if math.isfinite(when) else None
        try:
            await waiter
        finally:
            if handle is not None:
                handle.cancel()
            self._waiter = None

    def wake(self) -> None:
        """End the current wait now (a rate change or a stop)."""
        _resolve(self._waiter)

    def close(self) -> None:
        """Release resources (none)."""


class TimerfdPacer(LoopPacer):
    """Wait on a CLOCK_MONOTONIC timerfd watched by the loop: wake-ups within tens of microseconds."""

    # The loop's own timers round waits up to whole milliseconds (epoll's resolution); a timerfd
    # wakes epoll as soon as the kernel fires it. With spin_s > 0 the last stretch is a busy wait.

    def __init__(self, spin_s: float = 0.0) -> None:
        super().__init__()
        self.spin_s = spin_s
        self._fd = _libc.timerfd_create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self._loop: asyncio.AbstractEventLoop | None = None

    async def wait_until(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            loop.add_reader(self._fd, self._fired)
            self._loop = loop
        if not math.isfinite(when):
            return await super().wait_until(when)
        wake_at = when - self.spin_s
        if wake_at > time.monotonic():
            self._waiter = waiter = loop.create_future()
            secs = int(wake_at)
            spec = _itimerspec(_timespec(0, 0), _timespec(secs, int((wake_at - secs) * 1e9)))
            _libc.timerfd_settime(self._fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None)
            try:
                await waiter
            finally:
                self._waiter = None
            if waiter.result() == "woken":
                return
        while time.monotonic() < when:  # the spin: at most spin_s
            pass

    def wake(self) -> None:
        _resolve(self._waiter, "woken")

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _fired(self) -> None:
        try:
            os.read(self._fd, 8)
        except BlockingIOError:
            return
        _resolve(self._waiter, "fired")


def best_pacer(spin_s: float = 0.0) -> LoopPacer:
    """Return a TimerfdPacer on Linux, else a LoopPacer."""
    if _libc is not None:
        try:
            return TimerfdPacer(spin_s)
        except OSError:
            pass
    return LoopPacer()


def _resolve(waiter: asyncio.Future | None, value: object = None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(value)


class _timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _timespec), ("it_value", _timespec)]


_CLOCK_MONOTONIC, _TFD_TIMER_ABSTIME = 1, 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True) if sys.platform.startswith("linux") else None
