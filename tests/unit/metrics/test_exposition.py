"""The lab's exposition reader against prometheus_client's parser: the same samples, real captures and corners."""
from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.metrics.exposition import samples
from tests.unit.metrics.captures import FIXTURES

CORNERS = r"""# HELP odd_requests A counter with help text
# TYPE odd_requests counter
odd_requests{model="a\"b",path="c:\\tmp",note="two\nlines"} 3
odd_requests{ model = "spaced" , version="1" } 4 1700000000000
# TYPE gauge_x gauge
gauge_x 1.5e3
gauge_x{gpu_uuid="GPU-1"}	NaN
gauge_x{gpu_uuid="GPU-2"} +Inf
gauge_x{gpu_uuid="GPU-3"} -Inf
gauge_x{} 7

# TYPE lat summary
lat{quantile="0.99"} Nan
lat_count 12
lat_sum 3.25
"""


def reference(text: str) -> list[tuple[str, dict, float]]:
    """prometheus_client's samples, a counter's by the name the text gives it (the parser appends _total)."""
    return [(family.name if family.type == "counter" and s.name == f"{family.name}_total" else s.name,
             dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text) for s in family.samples]


def same(ours, theirs) -> bool:
    return len(ours) == len(theirs) and all(
        a[:2] == b[:2] and (a[2] == b[2] or (math.isnan(a[2]) and math.isnan(b[2]))) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.prom")))
def test_every_sample_of_a_real_capture_reads_as_prometheus_client_reads_it(name):
    text = (FIXTURES / name).read_text()
    ours, theirs = list(samples(text, lambda _: True)), reference(text)
    assert len(theirs) > 0
    assert same(ours, theirs), [(a, b) for a, b in zip(ours, theirs) if a != b][:5]


def test_escapes_spaces_specials_timestamps_and_comments_read_as_prometheus_client_reads_them():
    ours, theirs = list(samples(CORNERS, lambda _: True)), reference(CORNERS)
    assert same(ours, theirs), (ours, theirs)
    assert ours[0][1] == {"model": 'a"b', "path": "c:\\tmp", "note": "two\nlines"}


def test_only_the_names_asked_for_are_read_in_the_texts_order():
    text = (FIXTURES / "s2_after_300.prom").read_text()
    wanted = {"nv_inference_count", "nv_inference_request_summary_us"}
    ours = list(samples(text, wanted.__contains__))
    assert same(ours, [s for s in reference(text) if s[0] in wanted]), ours
    assert {name for name, _, _ in ours} == wanted


@pytest.mark.parametrize("line", ['x{model="a" 1', 'x{model=a} 1', "x", "x 1 2 3", 'x{model="a"} one'])
def test_a_line_that_is_not_a_sample_raises(line):
    with pytest.raises(ValueError):
        list(samples(line, lambda _: True))
