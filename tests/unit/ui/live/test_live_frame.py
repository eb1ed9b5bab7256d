"""One live frame per tick for every session (app/ui/live/live_frame.py): the cache's rules, then a FakeLab's frame."""
from __future__ import annotations

import sys
import threading
import time

from app.ui.live.live_frame import FrameCache, cache_of, frame
from app.ui.live.live_view import WINDOWS
from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import soon

SHARED_WINDOW_S = 170  # a window the pages do not offer (app.ui.live.live_view.WINDOWS)


def waiting_in_get(thread: threading.Thread) -> bool:
    """Return True when the thread waits inside FrameCache.get (for another session's build)."""
    frame_ = sys._current_frames().get(thread.ident)  # noqa: SLF001 - where the thread is now
    names = set()
    while frame_ is not None:
        names.add(frame_.f_code.co_name)
        frame_ = frame_.f_back
    return {"get", "wait"} <= names


def test_sessions_in_the_same_tick_share_one_build_even_when_they_ask_at_once():
    cache, started, release, calls, got = FrameCache(tick_s=10.0), threading.Event(), threading.Event(), [], []

    def build():
        calls.append(1)
        started.set()
        assert release.wait(10), "the test never released the build"
        return object()

    first = threading.Thread(target=lambda: got.append(cache.get(("live", "m"), 5.0, build)))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=lambda: got.append(cache.get(("live", "m"), 5.0, build))) for _ in range(7)]
    for t in others:
        t.start()
    soon(lambda: all(waiting_in_get(t) for t in others), what="the other sessions waiting for the build")
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert len(calls) == 1 and cache.builds == 1, (len(calls), cache.builds)
    assert len(got) == 8 and all(g is got[0] for g in got)


def test_a_new_tick_or_another_view_builds_again_and_the_cache_stays_bounded():
    cache = FrameCache(keep=3, tick_s=1.0)
    a = cache.get(("live", "m", 180), 100.2, object)
    assert cache.get(("live", "m", 180), 100.9, object) is a  # same second
    assert cache.get(("live", "m", 180), 101.0, object) is not a  # next second
    assert cache.get(("live", "m", 600), 101.0, object) is not a  # another window
    for t in range(10):
        cache.get(("live", "m", 60), 200.0 + t, object)
    assert len(cache._frames) == 3 and cache.builds == 13  # noqa: SLF001 - the bound itself


def test_a_failed_build_lets_the_next_session_try_again():
    cache = FrameCache()

    def boom():
        raise RuntimeError("server gone")

    try:
        cache.get(("k",), 1.0, boom)
    except RuntimeError:
        pass
    assert cache.get(("k",), 1.0, lambda: "ok") == "ok"


def test_the_labs_frame_is_shared_within_a_second_and_holds_every_chart(fake):
    assert SHARED_WINDOW_S not in WINDOWS.values()
    fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=2, duration_s=600), ran_s=12)
    now = float(int(time.time()))  # the start of this second: both calls fall in its tick
    before = cache_of(fake).builds
    one = frame(fake, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now)
    two = frame(fake, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now + 0.9)
    assert one is two and cache_of(fake).builds == before + 1
    assert {"throughput", "latency", "breakdown", "batches", "pending"} <= set(one.specs)
    assert one.running and one.targeted and one.tile.samples() > 0 and one.batch_hist
    assert frame(fake, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now + 1.0) is not one
    paused = frame(fake, "gpu_sim", SHARED_WINDOW_S, per_class=False, paused_at=now - 30)
    assert paused is not one and paused.now == now - 30


def test_a_change_inside_the_tick_is_not_hidden_by_the_shared_frame(fake):
    now = float(int(time.time())) + 5.0
    one = frame(fake, "gpu_sim", 180, per_class=False, now=now)
    fake.mark("gpu_sim", "traffic", "a marker inside the same second")
    two = frame(fake, "gpu_sim", 180, per_class=False, now=now + 0.5)
    assert two is not one and "a marker inside the same second" in [m.text for m in two.markers]
