"""Shapes and lengths: -1 dims filled, buckets, sequence lengths drawn from their distribution."""
from __future__ import annotations

from random import Random

import pytest

from loadgen.inputs.shapes import LengthSpec, ShapeSpec, fill


def test_shapes_fill_the_variable_dimension():
    assert fill((-1, 4), 3) == (3, 4) and fill((256,), 3) == (256,)
    assert ShapeSpec("choice", dims=(-1, 4), choices=(2, 3)).lengths() == [2, 3]
    assert len(ShapeSpec("uniform", low=1, high=10_000).lengths()) == 256
    assert ShapeSpec().lengths() == []  # fixed: one variant
    with pytest.raises(ValueError, match="at least 1"):
        ShapeSpec(batch=0)


def test_buckets_pad_each_length_up_to_the_smallest_bucket_that_holds_it():
    shape = ShapeSpec("uniform", dims=(-1,), low=1, high=8, buckets=(8, 4))
    assert shape.lengths() == [4, 4, 4, 4, 8, 8, 8, 8]  # each padded length as often as the lengths it holds
    assert shape.describe() == "1..8 padded to 4|8"
    assert ShapeSpec("choice", choices=(3, 9), buckets=(16,)).lengths() == [16, 16]
    with pytest.raises(ValueError, match="hold the longest length"):
        ShapeSpec("uniform", low=1, high=300, buckets=(64, 256))
    with pytest.raises(ValueError, match="uniform or choice"):
        ShapeSpec(buckets=(64,))


def test_sequence_lengths_follow_their_distribution():
    rng = Random(0)
    assert LengthSpec("fixed", n=7).sample(rng) == 7
    uniform = [LengthSpec("uniform", low=2, high=4).sample(rng) for _ in range(3000)]
    assert set(uniform) == {2, 3, 4}
    geometric = [LengthSpec("geometric", n=5).sample(rng) for _ in range(20_000)]
    assert min(geometric) == 1 and sum(geometric) / len(geometric) == pytest.approx(5.0, rel=0.05)
