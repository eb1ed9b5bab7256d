"""Input shapes and sequence lengths: fixed, or drawn from a distribution."""
from __future__ import annotations

from dataclasses import dataclass
from random import Random

MAX_VARIANTS = 256  # pre-encoded bodies per class


@dataclass(frozen=True)
class ShapeSpec:
    """A class's shapes without the batch dimension: dims for the inputs served with a -1 (those that give no dims
    of their own), a variable length for the -1s left, and the rows of each request."""

    kind: str = "fixed"  # fixed | uniform | choice
    dims: tuple[int, ...] | None = None  # None: each input's own dims, else the served ones (a -1 left: 1)
    low: int = 1  # uniform: shortest length
    high: int = 128  # uniform: longest length
    choices: tuple[int, ...] = ()  # choice: the lengths to pick from
    batch: int = 1  # rows per request (models with max_batch_size > 0)
    buckets: tuple[int, ...] = ()  # pad each length up to the smallest of these that holds it

    def __post_init__(self):
        if self.kind not in ("fixed", "uniform", "choice"):
            raise ValueError(f"shape kind must be fixed, uniform or choice, got {self.kind!r}")
        if self.dims is not None:
            object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        object.__setattr__(self, "choices", tuple(int(c) for c in self.choices))
        if self.batch < 1:
            raise ValueError(f"shape batch counts the rows of a request: it must be at least 1, got {self.batch}")
        if self.kind == "uniform" and not 1 <= self.low <= self.high:
            raise ValueError(f"uniform shape needs 1 <= low <= high, got {self.low}..{self.high}")
        if self.kind == "choice" and (not self.choices or min(self.choices) < 1):
            raise ValueError(f"a choice shape needs choices: a list of lengths of at least 1, got {list(self.choices)}")
        object.__setattr__(self, "buckets", tuple(sorted(int(b) for b in self.buckets)))
        if self.buckets:
            if self.kind == "fixed":
                raise ValueError("buckets pad variable lengths: give a uniform or choice length too")
            longest = self.high if self.kind == "uniform" else max(self.choices)
            if self.buckets[0] < 1 or longest > self.buckets[-1]:
                raise ValueError(f"buckets {list(self.buckets)} must be positive and hold the longest length "
                                 f"({longest}); add a bucket of at least {longest}")

    def lengths(self) -> list[int]:
        """Return the variable lengths to pre-encode, each equally likely (empty when fixed), padded to the
        buckets when there are some (a padded length appears once per length it holds)."""
        if self.kind == "fixed":
            return []
        if self.kind == "choice":
            drawn = list(self.choices)
        else:
            span = self.high - self.low + 1
            drawn = (list(range(self.low, self.high + 1)) if span <= MAX_VARIANTS
                     else [self.low + (span - 1) * i // (MAX_VARIANTS - 1) for i in range(MAX_VARIANTS)])
        return [self.padded(n) for n in drawn]

    def padded(self, length: int) -> int:
        """Return the length a request is sent with: the smallest bucket that holds it (itself without buckets)."""
        return next((b for b in self.buckets if b >= length), length)

    def describe(self) -> str:
        """Return the variable length in words: '8..128', '16|32', padded to buckets when there are some."""
        if self.kind == "fixed":
            return ""
        text = f"{self.low}..{self.high}" if self.kind == "uniform" else "|".join(map(str, self.choices))
        return f"{text} padded to {'|'.join(map(str, self.buckets))}" if self.buckets else text


def fill(dims: tuple[int, ...], length: int) -> tuple[int, ...]:
    """Return dims with every -1 replaced by length."""
    return tuple(length if d == -1 else d for d in dims)


@dataclass(frozen=True)
class LengthSpec:
    """Number of steps of each sequence: fixed, uniform between low and high, or geometric with mean n."""

    kind: str = "fixed"  # fixed | uniform | geometric
    n: int = 10
    low: int = 5
    high: int = 20

    def __post_init__(self):
        if self.kind not in ("fixed", "uniform", "geometric"):
            raise ValueError(f"length kind must be fixed, uniform or geometric, got {self.kind!r}")
        if self.n < 1 or not 1 <= self.low <= self.high:
            raise ValueError("sequence lengths must be at least 1 (and low <= high)")

    def sample(self, rng: Random) -> int:
        """Draw one sequence length."""
        if self.kind == "fixed":
            return self.n
        if self.kind == "uniform":
            return rng.randint(self.low, self.high)
        # Geometric on 1, 2, ... with mean n: count trials until a success of probability 1/n.
        length = 1
        while rng.random() >= 1.0 / self.n:
            length += 1
        return length
