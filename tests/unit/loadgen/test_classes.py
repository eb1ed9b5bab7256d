"""Traffic classes: the picker draws each class by its share."""
from __future__ import annotations

from random import Random

import pytest

from loadgen.classes import ClassPicker, PreparedClass, Target


def test_class_picker_follows_shares():
    a, b = PreparedClass(Target("a", "m"), (b"",)), PreparedClass(Target("b", "m"), (b"",))
    picker = ClassPicker([a, b], [1.0, 3.0], Random(0))
    picks = [picker.pick().target.cls for _ in range(20_000)]
    assert picks.count("b") / len(picks) == pytest.approx(0.75, abs=0.015)
