"""The GPU evidence capture's memory sample: it waits for the gauges to settle, never past its limit (a scripted
/metrics and clock; tests/contract/scripts/test_capture_gpu_evidence.py rehearses the whole capture on a real
server)."""
from __future__ import annotations

from scripts.capture_gpu_evidence import settled_memory


def _gpu_text(*used: float) -> str:
    return "".join(f'nv_gpu_memory_used_bytes{{gpu_uuid="GPU-{i}"}} {u}\n' for i, u in enumerate(used))


def test_the_memory_sample_waits_for_the_gauges_to_settle_and_no_longer_than_its_limit():
    now = [0.0]

    def sleep(s):
        now[0] += s

    reads = iter([_gpu_text(1e9, 0), _gpu_text(2e9, 0), _gpu_text(2e9, 0), _gpu_text(9e9, 0)])
    assert settled_memory(lambda: next(reads), clock=lambda: now[0], sleep=sleep) == 3  # a reload shows late
    moving = (_gpu_text(float(i)) for i in range(100))
    now[0] = 0.0
    assert settled_memory(lambda: next(moving), timeout_s=11.0, clock=lambda: now[0], sleep=sleep) == 11  # read at 12.0 s
    assert settled_memory(lambda: "nv_inference_count{model=\"m\"} 1\n", sleep=sleep) == 1  # no GPU: no wait
