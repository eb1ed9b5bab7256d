"""A load that every request of fails, the way users meet it: a config change the running traffic no longer fits
(gpu_sim narrowed under it)."""
from __future__ import annotations

from tests.helpers import read_config, reload

REFUSAL = "unexpected shape for input 'INPUT' for model 'gpu_sim'. Expected [-1,4], got [1,256]"


def narrow_gpu_sim(triton) -> None:
    """Reload gpu_sim serving [4] in and out: every request of a load prepared for [256] is refused (REFUSAL)."""
    config = read_config(triton.repo, "gpu_sim")
    config.input[0].dims[:] = [4]
    config.output[0].dims[:] = [4]
    reload(triton.endpoint, "gpu_sim", config)
