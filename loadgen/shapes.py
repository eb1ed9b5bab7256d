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

    def lengths(self) -> list[int]:
        """Return the variable lengths to pre-encode, each equally likely (empty when fixed)."""
        if self.kind == "fixed":
            return []
        if self.kind == "choice":
            return list(self.choices)
        span = self.high - self.low + 1
        if span <= MAX_VARIANTS:
            return list(range(self.low, self.high + 1))
        return [self.low + (span - 1) * i // (MAX_VARIANTS - 1) for i in range(MAX_VARIANTS)]

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
