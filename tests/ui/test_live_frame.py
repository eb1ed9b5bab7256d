"""One live frame per tick for every session: the cache's rules, then the real lab's frame."""
from __future__ import annotations

import threading
import time

from app.ui.live.live_view import WINDOWS
from app.ui.live.live_frame import FrameCache, cache_of, frame

SHARED_WINDOW_S = 170  # a window the pages do not offer (app.ui.live.live_view.WINDOWS)


def test_sessions_in_the_same_tick_share_one_build_even_when_they_ask_at_once():
    cache = FrameCache(tick_s=10.0)
    started = threading.Event()
    calls = []

    def build():
        calls.append(1)
        started.set()
        time.sleep(0.2)  # a slow build: the other sessions arrive while it runs
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(("live", "m"), 5.0, build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
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
    assert len(cache._frames) == 3 and cache.builds == 13


def test_a_failed_build_lets_the_next_session_try_again():
    cache = FrameCache()

    def boom():
        raise RuntimeError("server gone")

    try:
        cache.get(("k",), 1.0, boom)
    except RuntimeError:
        pass
    assert cache.get(("k",), 1.0, lambda: "ok") == "ok"


def test_the_labs_frame_is_shared_within_a_second(lab):
    # a window no page offers (SHARED_WINDOW_S): a page run left over from an earlier test of this worker, drawing
    # the same model, could build the page's frame of this second first (seen once in a first pass on 6 workers)
    assert SHARED_WINDOW_S not in WINDOWS.values()
    now = float(int(time.time()))  # the start of this second: both calls fall in its tick
    before, state = cache_of(lab).builds, (lab.traffic().running, lab.traffic().runs, lab.timeline_version())
    one = frame(lab, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now)
    two = frame(lab, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now + 0.9)
    assert one is two and cache_of(lab).builds == before + 1, (  # what a frame's key holds, before and after
        state, (lab.traffic().running, lab.traffic().runs, lab.timeline_version()), [m.text for m in lab.markers("gpu_sim")])
    assert {"throughput", "latency", "breakdown", "batches", "pending"} <= set(one.specs)
    assert frame(lab, "gpu_sim", SHARED_WINDOW_S, per_class=False, now=now + 1.0) is not one
    paused = frame(lab, "gpu_sim", SHARED_WINDOW_S, per_class=False, paused_at=now - 30)
    assert paused is not one and paused.now == now - 30


def test_a_change_inside_the_tick_is_not_hidden_by_the_shared_frame(lab):
    now = float(int(time.time())) + 5.0  # a tick after the marker below, whenever in its second it lands
    one = frame(lab, "gpu_sim", 180, per_class=False, now=now)
    lab.mark("gpu_sim", "traffic", "a marker inside the same second")
    two = frame(lab, "gpu_sim", 180, per_class=False, now=now + 0.5)
    assert two is not one and "a marker inside the same second" in [m.text for m in two.markers]
