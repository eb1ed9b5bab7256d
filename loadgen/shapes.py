"""Input shapes and sequence lengths: fixed, or drawn from a distribution."""
from __future__ import annotations

from dataclasses import dataclass
from random import Random

MAX_VARIANTS = 256  # pre-encoded bodies per class


@dataclass(frozen=True)
class ShapeSpec:
    """Shape of each input without the batch dimension: fixed, or a variable length in place of -1."""

    kind: str = "fixed"  # fixed | uniform | choice
    dims: tuple[int, ...] | None = None  # None: the model's dims
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
        if self.kind == "uniform" and not 1 <= self.low <= self.high:
            raise ValueError(f"uniform shape needs 1 <= low <= high, got {self.low}..{self.high}")
        if self.kind == "choice" and not self.choices:
            raise ValueError("a choice shape needs choices: a list of lengths")
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

    def shapes(self, model_dims: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Return the concrete input shapes (without batch) this spec produces for a model's dims."""
        dims = self.dims if self.dims is not None else tuple(model_dims)
        lengths = self.lengths()
        if -1 in dims and not lengths:
            raise ValueError(f"the input has variable dims {list(dims)}: give shape dims, or a uniform/choice length")
        if not lengths:
            return [dims]
        if -1 not in dims:
            raise ValueError(f"a variable length needs a -1 in the dims, got {list(dims)}")
        return [tuple(n if d == -1 else d for d in dims) for n in lengths]


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
