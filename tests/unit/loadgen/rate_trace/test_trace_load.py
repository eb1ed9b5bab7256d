"""The rate_trace arrival: a schedule plays a trace (compressed, scaled, one class), a rate change keeps its place,
bad traces are refused in words, and the CLI builds it. A real run of one: tests/contract/loadgen/rate_trace/."""
from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from random import Random

import pytest

from loadgen.cli import main, parser, spec_from_args
from loadgen.rate_trace.rate_trace import TraceError
from loadgen.rate_trace.shipped import SHIPPED
from loadgen.rate_trace.trace_load import is_trace, played_s, trace_gaps, trace_load
from loadgen.schedule import Schedule, Stream
from loadgen.spec import ArrivalKind, ArrivalSpec, LoadSpec, Mode

Z = 5.0  # a count is within Z Poisson standard deviations of its expectation: never by chance (p < 1e-6)


def recorded(name: str) -> list[tuple[float, float]]:
    """Read a shipped trace's (t, rate) rows with the csv module (not the code under test)."""
    with open(SHIPPED / f"{name}.csv", newline="") as f:
        return [(float(r["t"]), float(r["rate"])) for r in csv.DictReader(f)]


def expected(rows: list[tuple[float, float]], step_s: float, t0: float, t1: float, factor: float = 1.0) -> float:
    """Return the requests a recording asks over recorded [t0, t1), rates × factor (one step held step_s)."""
    return sum(rate * step_s * factor for t, rate in rows if t0 <= t < t1)


def within(count: int, mean: float, what: str) -> None:
    assert abs(count - mean) <= Z * math.sqrt(mean) + 1, f"{what}: {count} arrivals, expected {mean:.0f}"


def play(arrival: ArrivalSpec, rate: float, seed: int = 7, until: float = math.inf,
         schedule: Schedule | None = None) -> list[float]:
    """Pop a one-stream schedule's due times (s from the start) until it ends or reaches until."""
    schedule = schedule or Schedule([Stream("s", arrival, rate, Random(seed))])
    out = []
    while schedule.peek() is not None and schedule.peek() < until:
        out.append(schedule.pop()[0])
    return out


def count(times: list[float], t0: float, t1: float) -> int:
    return sum(t0 <= t < t1 for t in times)


FLASH = ArrivalSpec(kind=ArrivalKind.RATE_TRACE, rate_trace="flash_crowd", compress=60.0)


def test_a_schedule_plays_the_flash_crowd_compressed_step_by_step():
    rows = recorded("flash_crowd")
    mean = sum(r for _, r in rows) / len(rows)
    times = play(FLASH, mean)  # rate = the trace's mean: played as recorded, 60 times faster
    assert times and max(times) < 3600 / 60, max(times)  # one hour in one minute, then the stream ends
    before, crowd = count(times, 0, 20), count(times, 1220 / 60, 1520 / 60)
    within(before, expected(rows, 10, 0, 1200) / 60, "before the crowd (recorded 0-20 min)")
    within(crowd, expected(rows, 10, 1220, 1520) / 60, "the crowd (recorded 20:20-25:20)")
    within(len(times), expected(rows, 10, 0, 3600) / 60, "the whole hour")
    assert crowd / 5 > 4 * before / 20, (before, crowd)  # per played second: the crowd is ~5× the steady rate


def test_constant_process_spaces_each_steps_arrivals_evenly():
    rows = recorded("flash_crowd")
    mean = sum(r for _, r in rows) / len(rows)
    times = play(dataclasses.replace(FLASH, process="constant"), mean)
    total = expected(rows, 10, 0, 3600) / 60
    assert abs(len(times) - total) <= 1, (len(times), total)  # the expected count, to the request
    gaps = [b - a for a, b in zip(times, times[1:]) if b < 19]  # the steady part: about 80 req/s
    # even spacing: the gaps differ only as the steps' recorded rates do (±5 % noise; Poisson gaps span ×100)
    assert max(gaps) < 1.5 * min(gaps), (min(gaps), max(gaps))


def test_a_rate_change_mid_trace_keeps_the_place_and_the_shape():
    rows = recorded("flash_crowd")
    mean = sum(r for _, r in rows) / len(rows)
    schedule = Schedule([Stream("s", FLASH, mean, Random(3))])
    first = play(FLASH, mean, until=30.0, schedule=schedule)
    schedule.set_rate("s", 2 * mean, now_s=30.0)  # twice the played mean from played second 30 on
    after = play(FLASH, mean, schedule=schedule)
    within(len(first), expected(rows, 10, 0, 1800) / 60, "before the change")
    # continues at recorded 30 min (the decay), scaled ×2 — not the trace's start again (80 req/s × 2)
    here = expected(rows, 10, 1800, 2100, 2) / 60
    again = expected(rows, 10, 0, 300, 2) / 60
    assert here > again + 2 * Z * math.sqrt(here), (here, again)  # the two hypotheses are far apart
    within(count(after, 30, 35), here, "played 30-35 s after the change")
    within(len(after), expected(rows, 10, 1800, 3600, 2) / 60, "the rest at scale 2")
    assert max(after) < 60.0, max(after)


def write_classes(tmp_path: Path) -> Path:
    path = tmp_path / "classes.csv"
    lines = ["t,rate,class"] + [f"{t},{a},{cls}" for t in range(0, 600, 60)
                                for a, cls in ((50, "web"), (200 if t >= 300 else 0, "batch"))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_class_of_a_per_class_csv_plays_its_own_rates(tmp_path):
    path = write_classes(tmp_path)
    arrival = ArrivalSpec(kind=ArrivalKind.RATE_TRACE, rate_trace=str(path), compress=60.0, trace_class="batch")
    spec = trace_load(LoadSpec(), str(path), compress=60.0, trace_class="batch")
    assert spec.rate == pytest.approx(100.0) and spec.duration_s == pytest.approx(10.0)  # 0 then 200: mean 100
    times = play(arrival, spec.rate)
    assert count(times, 0, 5) == 0, count(times, 0, 5)  # batch is silent for its first 5 minutes
    within(count(times, 5, 10), 200 * 5, "batch's 200 req/s half")


@pytest.mark.parametrize(("arrival", "words"), [
    (dict(rate_trace="/nonexistent/rates.csv"), ["'/nonexistent/rates.csv'", "No such file", "diurnal, flash_crowd"]),
    (dict(rate_trace="flash_crowd", trace_class="vip"), ["no class 'vip'", "its classes: none"]),
    (dict(rate_trace="ZEROS"), ["every rate is 0", "needs some traffic"]),
    (dict(rate_trace="CLASSES", trace_class="web", compress=5000.0), ["compress", "at most 1000"]),
])
def test_bad_traces_are_refused_in_words(tmp_path, arrival, words):
    zeros = tmp_path / "zeros.csv"
    zeros.write_text("t,rate\n0,0\n60,0\n")
    ref = {"ZEROS": str(zeros), "CLASSES": str(write_classes(tmp_path))}.get(arrival["rate_trace"],
                                                                             arrival["rate_trace"])
    spec = ArrivalSpec(kind=ArrivalKind.RATE_TRACE, **{**arrival, "rate_trace": ref})
    with pytest.raises(TraceError) as info:
        next(trace_gaps(spec, 10.0, Random(0)))
    assert all(w in str(info.value) for w in words), str(info.value)


def test_out_of_bounds_compress_and_scale_are_refused_by_name():
    with pytest.raises(ValueError, match="compress") as info:
        trace_load(LoadSpec(), "flash_crowd", compress=0.0)
    assert "positive" in str(info.value), info.value
    with pytest.raises(TraceError, match=r"scale = 1000000.0: scale \(rate multiplier\)"):  # the factor bound
        trace_load(LoadSpec(), "flash_crowd", compress=60.0, scale=1e6)
    with pytest.raises(TraceError, match="scale 50 plays a rate") as info:  # a mean of 6,760 req/s: over 5,000
        trace_load(LoadSpec(), "flash_crowd", compress=60.0, scale=50.0)
    assert "use scale 37" in str(info.value), info.value
    with pytest.raises(TraceError, match="plays 24 h; a run lasts at most 1 h") as info:
        trace_load(LoadSpec(), "diurnal", compress=1.0)
    assert "use compress 24 or more" in str(info.value), info.value
    with pytest.raises(ValueError, match="needs rate_trace"):
        ArrivalSpec(kind=ArrivalKind.RATE_TRACE)


def test_a_trace_load_is_a_valid_load_spec_and_validation_still_guards_it():
    rows = recorded("flash_crowd")
    mean = sum(r for _, r in rows) / len(rows)
    spec = trace_load(LoadSpec(concurrency=3, model="m"), "flash_crowd", compress=12.0, scale=0.5)
    assert (spec.mode, spec.model, spec.max_requests) == (Mode.OPEN, "m", None)
    assert spec.rate == pytest.approx(mean * 0.5, rel=1e-6) and spec.duration_s == pytest.approx(300.0)
    assert played_s(spec.arrival) == pytest.approx(300.0) and is_trace(spec)
    again = LoadSpec(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})  # runs validate()
    assert again == spec
    with pytest.raises(ValueError, match="arrival.compress"):
        dataclasses.replace(spec, arrival=dataclasses.replace(spec.arrival, compress=2000.0))
    with pytest.raises(ValueError, match=r"rate = 16000.0: rate \(req/s\) must be between 0 and 5000"):
        dataclasses.replace(spec, rate=16_000.0)


def test_the_cli_builds_a_trace_run_with_a_float_compress():
    rows = recorded("flash_crowd")
    mean = sum(r for _, r in rows) / len(rows)
    base = ["run", "--url", "http://127.0.0.1:1", "--arrival", "rate_trace", "-p", "rate_trace=flash_crowd",
            "-p", "compress=60"]
    spec = spec_from_args(parser().parse_args(base))
    assert spec.arrival.kind is ArrivalKind.RATE_TRACE and spec.arrival.compress == 60.0
    assert isinstance(spec.arrival.compress, float) and spec.mode is Mode.OPEN
    assert spec.rate == pytest.approx(mean, rel=1e-6) and spec.duration_s == pytest.approx(60.0)
    scaled = spec_from_args(parser().parse_args(base + ["-p", "scale=0.5", "--duration", "20"]))
    assert scaled.rate == pytest.approx(mean / 2, rel=1e-6) and scaled.duration_s == 20.0
    rated = spec_from_args(parser().parse_args(base + ["--rate", "270"]))
    assert rated.rate == 270.0 and rated.arrival.compress == 60.0
    with pytest.raises(ValueError, match="not both"):
        spec_from_args(parser().parse_args(base + ["--rate", "270", "-p", "scale=2"]))


def test_the_cli_says_what_is_wrong_with_a_trace(capsys):
    assert main(["run", "--url", "http://127.0.0.1:1", "--arrival", "rate_trace", "-p",
                 "rate_trace=/nonexistent.csv"]) == 2
    assert "No such file" in capsys.readouterr().err
