"""THE table of load bounds: every way to start load (the traffic form, A/B plans, sweeps, scenarios, the CLIs,
the worker, Locust) checks a value against the same Limit, and a value outside is refused, never replaced."""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

from loadgen.inputs.shapes import MAX_VARIANTS


@dataclass(frozen=True)
class Limit:
    """The range a number may take, and the words a person knows it by."""

    what: str  # how the page and the messages name it, with its unit
    low: float
    high: float
    whole: bool = False  # a count: whole numbers only
    above: bool = False  # low itself is refused (a positive quantity)
    why: str = ""  # what the bound protects, said after a refusal of a spec

    def within(self, low: float | None = None, what: str | None = None) -> Limit:
        """Return this limit with a higher floor (a form's least useful value) or other words; never wider."""
        return dataclasses.replace(self, low=max(self.low, low) if low is not None else self.low,
                                   above=self.above and (low is None or low <= self.low), what=what or self.what)

    def fits(self, value) -> bool:
        """Return True when value is a finite number (whole for a count) inside the range."""
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
            return False
        if self.whole and value != int(value):
            return False
        return (value > self.low if self.above else value >= self.low) and value <= self.high

    def range_text(self) -> str:
        """Return the range in words: 'between 1 and 256', 'positive and at most 3600'."""
        low, high = _number(self.low), _number(self.high)
        if self.above:
            return f"{'positive' if self.low == 0 else f'above {low}'} and at most {high}"
        return f"between {low} and {high}"

    def problem(self, value, field: str | None = None) -> str | None:
        """Return what is wrong with value (None when it fits). Without field: the form's words ('... was typed');
        with field: the spec's path, the value, the range and why the bound is there."""
        if self.fits(value):
            return None
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if number and not math.isfinite(value):
            rule = f"must be a finite number {self.range_text()}"
        elif not number or (self.whole and value != int(value)):
            rule = f"must be {'a whole number' if self.whole else 'a number'} {self.range_text()}"
        else:
            rule = f"must be {self.range_text()}"
        if field is None:
            return f"{self.what} {rule}; {value!r} was typed"
        return f"{field} = {value!r}: {self.what} {rule}" + (f" ({self.why})" if self.why else "")

    def check(self, value, field: str) -> None:
        """Raise ValueError naming the field when value does not fit."""
        wrong = self.problem(value, field)
        if wrong:
            raise ValueError(wrong)


MIB = 2**20

LIMITS: dict[str, Limit] = {
    # --- a load: what one load generator sends -------------------------------------------------------------
    "concurrency": Limit("concurrency", 0, 256, whole=True,
                         why="each request in flight holds one of the load generator's threads"),
    "in_flight": Limit("requests in flight (concurrency plus concurrent sequences)", 0, 256, whole=True,
                       why="each holds one of the load generator's threads"),
    "rate": Limit("rate (req/s)", 0, 5000, why="beyond this one load generator falls behind its schedule"),
    "peak_rate": Limit("peak rate (req/s)", 0, 50_000,
                       why="the highest rate a burst, a step or a high state reaches from the mean rate"),
    "duration_s": Limit("duration (s)", 0, 3600, above=True, why="longer runs: run again, or bound by requests"),
    "max_requests": Limit("request count", 1, 10_000_000, whole=True),
    "warmup_s": Limit("warm-up (s)", 0, 3600),
    "drain_s": Limit("drain (s)", 0, 600),
    "late_after_ms": Limit("late after (ms)", 0, 60_000),
    "spin_us": Limit("busy-wait before each send (µs)", 0, 10_000, why="a busy-wait holds a CPU"),
    "stop_when_all_fail_s": Limit("stop when every request fails for (s)", 0, 3600, above=True),
    "max_connections": Limit("connections", 1, 1024, whole=True, why="each is an open socket to the server"),
    "classes": Limit("traffic classes and sequence groups", 1, 16, whole=True),
    "share": Limit("class share", 0, 1_000_000),
    "priority": Limit("priority level", 0, 1_000_000, whole=True),
    "timeout_ms": Limit("client timeout (ms)", 0, 600_000, above=True),
    "server_timeout_us": Limit("server queue timeout (µs)", 0, 600_000_000, whole=True),
    "sla_ms": Limit("SLA (ms)", 0, 30_000, above=True),
    "retry_attempts": Limit("attempts (the first included)", 1, 10, whole=True),
    "backoff_ms": Limit("backoff (ms)", 0, 600_000),
    "backoff_multiplier": Limit("backoff multiplier", 1, 100),
    "batch": Limit("rows per request", 1, 4096, whole=True),
    "request_values": Limit("values of one input in one request (its rows × dims, -1 at the longest length)",
                            1, 16 * MIB, whole=True, why="at 8 bytes a value, 128 MiB a request"),
    "request_bytes": Limit("bytes of one request's inputs", 0, 64 * MIB, whole=True),
    "string_len": Limit("string length (bytes)", 0, MIB, whole=True),
    "variants": Limit("pre-encoded request variants of a class", 1, MAX_VARIANTS, whole=True),
    "data_file_bytes": Limit("size of an input-data JSON file", 0, 512 * MIB, whole=True,
                             why="it is read whole before its variants are checked"),
    "sequences": Limit("concurrent sequences", 0, 64, whole=True),
    "sequence_length": Limit("sequence length (steps)", 1, 10_000, whole=True),
    "think_ms": Limit("think time (ms)", 0, 60_000),
    "arrival_s": Limit("arrival period (s)", 0, 3600, above=True),
    "pause_s": Limit("arrival pause, ramp or step (s)", 0, 3600),
    "arrival_steps": Limit("steps of a step arrival", 1, 1000, whole=True),
    "arrival_factor": Limit("rate factor of an arrival process", 0, 1000),
    "trace_speed": Limit("trace speed", 0, 1000, above=True),
    "text": Limit("characters of a name or path", 0, 4096, whole=True),
    # --- a stream of generations (scenarios) ------------------------------------------------------------------
    "stream_timeout_s": Limit("generation timeout (s)", 0, 600, above=True),
    # --- a sweep -----------------------------------------------------------------------------------------------
    "sweep_loads": Limit("load levels of a sweep", 1, 32, whole=True),
    "sweep_points": Limit("points of a sweep (configurations × loads)", 1, 400, whole=True,
                          why="each point takes seconds: narrow the space"),
    "throughput_floor": Limit("minimum throughput (req/s)", 0, 1_000_000),
    "preferred_sizes": Limit("preferred batch sizes in one set", 1, 8, whole=True),
    "batch_size": Limit("batch size", 0, 4096, whole=True),
    # --- an A/B comparison and a scenario's phases ------------------------------------------------------------
    "arms": Limit("configurations compared", 2, 8, whole=True),
    "trials": Limit("trials", 2, 20, whole=True),
    "trial_s": Limit("seconds measured per trial", 1, 600),
    "trial_warmup_s": Limit("warm-up per trial (s)", 0, 60),
    "min_effect": Limit("smallest difference called (a fraction)", 0, 1),
}


def check(name: str, value, field: str | None = None) -> None:
    """Raise ValueError when value does not fit the table's `name` (field: the path shown, default the name)."""
    LIMITS[name].check(value, field or name)


def check_finite(value, where: str = "") -> None:
    """Raise ValueError naming the first nan or infinity inside value (numbers, dataclasses, tuples, lists,
    dicts)."""
    check_leaves(value, where, text=False)


def check_leaves(value, where: str = "", text: bool = True) -> None:
    """Raise ValueError naming the first nan or infinity inside value, and (text) the first text longer than the
    table's 'text' bound: one walk over dataclasses, tuples, lists and dicts."""
    most = int(LIMITS["text"].high)
    if _fine(value, most, text):  # the walk without paths first (a spec is checked each time one is made)
        return
    for path, leaf in leaves(value, where):
        if isinstance(leaf, float) or (isinstance(leaf, numbers.Real) and not isinstance(leaf, (int, bool))):
            if not math.isfinite(leaf):
                name = path.rpartition(".")[2].partition("[")[0]
                what = f"{LIMITS[name].what} " if name in LIMITS else ""
                raise ValueError(f"{path} = {leaf!r}: {what}must be a finite number, not nan or infinity")
        elif text and isinstance(leaf, str) and len(leaf) > most:
            raise ValueError(f"{path or 'the text'} is {len(leaf):,} characters; a name or path may have at most "
                             f"{most}")


def _fine(value, most: int, text: bool) -> bool:
    """Return True when no leaf of value would stop check_leaves: its walk without building each leaf's path (a
    default LoadSpec checked in 31 µs, where listing its leaves with their paths took 59 µs)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (str, int)):  # bool is an int
        return not (text and isinstance(value, str) and len(value) > most)
    if isinstance(value, (tuple, list)):
        return all(_fine(v, most, text) for v in value)
    if isinstance(value, dict):
        return all(_fine(v, most, text) for v in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_fine(getattr(value, f.name), most, text) for f in dataclasses.fields(value))
    if isinstance(value, numbers.Real):
        return math.isfinite(value)
    return True


def nonfinite(value, where: str = "") -> str | None:
    """Return 'path = value' of the first nan or infinity inside value (None when every number is finite)."""
    try:
        check_finite(value, where)
    except ValueError as exc:
        return str(exc).partition(": ")[0]
    return None


def leaves(value, where: str = ""):
    """Yield (path, value) of every number, text and other leaf inside dataclasses, tuples, lists and dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from leaves(v, f"{where}[{i}]")
        return
    else:
        yield where, value
        return
    for name, v in items:
        yield from leaves(v, f"{where}.{name}" if where else name)


def _number(x: float) -> str:
    return str(int(x)) if x == int(x) else f"{x:g}"


def check_request_bytes(nbytes: int, where: str) -> None:
    """Raise ValueError when one request's inputs would be larger than the table allows (where: class and model)."""
    limit = LIMITS["request_bytes"]
    if not limit.fits(nbytes):
        raise ValueError(f"{where}: one request's inputs are {nbytes:,} bytes; {limit.what} must be at most "
                         f"{limit.high:,.0f} (64 MiB): send fewer rows or shorter lengths")
