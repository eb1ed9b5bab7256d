"""Server caps: the GPU count read from a GPU server's metrics text."""
from __future__ import annotations

from app.config import gpu_count_from_metrics

# The shape of a GPU server's metrics (NGC tritonserver); written by hand: no GPU here to capture it.
GPU_METRICS = """\
# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-0a1b"} 0.25
nv_gpu_utilization{gpu_uuid="GPU-9f8e"} 0
# HELP nv_gpu_memory_used_bytes GPU used memory, in bytes
# TYPE nv_gpu_memory_used_bytes gauge
nv_gpu_memory_used_bytes{gpu_uuid="GPU-0a1b"} 1024
"""


def test_gpus_are_counted_from_the_utilization_metric():
    assert gpu_count_from_metrics(GPU_METRICS) == 2
    assert gpu_count_from_metrics("# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.5\n") == 0
