"""The GPU panel of the Instances page (app/ui/panels/gpu_panel.py): hidden on a CPU server, and on one that reports
GPUs each GPU's figures, then the memory one instance takes and whether one more fits."""
from __future__ import annotations

from app.metrics.gpu import Gpu, GpuView
from tests.unit.ui.apptest import open_page, texts

GPUS = (Gpu("GPU-1", 0.25, 1e9, 4e10, 120.5, 400.0), Gpu("GPU-2", 0.75, 3e9, 4e10, 310.0, 400.0))


def test_a_cpu_server_shows_no_gpu_panel(on_fake):
    at = open_page("lab_pages/instances.py")
    assert "GPUs" not in [h.value for h in at.subheader]


def test_each_gpu_is_shown_then_what_one_instance_takes(on_fake):
    on_fake.set_gpus(GpuView(GPUS, 1, (1,), None, None))
    at = open_page("lab_pages/instances.py")
    assert "GPUs" in [h.value for h in at.subheader]
    table = next(d.value for d in at.dataframe if "utilization" in d.value.columns)
    assert list(table["utilization"]) == ["25%", "75%"] and list(table["power (W)"]) == [120.5, 310.0], table
    assert any("change the instance count once" in c for c in texts(at.caption)), texts(at.caption)
    too_big = "one more instance needs about 40.00 GiB of GPU memory, but the most free on any GPU is 36.32 GiB"
    on_fake.set_gpus(GpuView(GPUS, 2, (1, 2), 40 * 2**30, too_big))
    at.run()
    assert any("about 40.00 GiB (slope over instance counts 1, 2)" in c for c in texts(at.caption)), texts(at.caption)
    assert too_big in texts(at.warning), texts(at.warning)
