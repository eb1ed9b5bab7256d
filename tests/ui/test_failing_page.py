"""Failing traffic is loud on a page: the failure tile, the status table's column, the server's words, the diagnosis."""
from __future__ import annotations

import re
import time

from app.metrics.catalog import label
from loadgen.spec import LoadSpec
from tests.loadgen.failing import REFUSAL, narrow_gpu_sim
from tests.ui.apptest import metric, open_page, texts, wait_until


def only_failures(lab, seconds: float) -> bool:
    """Return True once the last `seconds` of gpu_sim hold failures and no answer (20 at least: one request in
    flight on a starved host fails ~10 a second, on a quiet one hundreds)."""
    failed, ended = lab.measure("gpu_sim", time.time() - seconds, time.time()).failures()
    return failed >= 20 and failed == ended


def test_a_config_change_that_fails_every_request_is_loud_on_the_page(lab, triton, restore_model):
    restore_model("gpu_sim")
    lab.start_traffic(LoadSpec(model="gpu_sim", concurrency=1, duration_s=90.0,
                               stop_when_all_fail_s=None))  # kept running: the page is read while it fails
    try:
        wait_until(lambda: lab.measure("gpu_sim", time.time() - 5, time.time()).samples() > 20, 30, "answers")
        narrow_gpu_sim(triton)  # the running load's [1,256] no longer fits
        wait_until(lambda: only_failures(lab, 11), 60, "failures alone in the tiles' and the status' 10 s")
        at = open_page("lab_pages/diagnosis.py")
    finally:
        lab.stop_traffic()
    warnings = texts(at.warning)
    print(f"tile {metric(at, label('failed_share'))!r}; warnings: {warnings}")
    assert metric(at, label("failed_share")) == "100.0"
    assert any(w.startswith("**Running — 100 % of requests failing**") for w in warnings), warnings
    assert any(w.startswith("**100 % of requests failing**") and REFUSAL in w for w in warnings), warnings  # live
    status = next(w for w in warnings if w.startswith("**Requests are failing"))
    assert "`http_400` ×" in status and REFUSAL in status and "Server side (`gpu_sim`" in status, status
    table = next(t.value for t in at.dataframe if label("failed_share") in t.value.columns)
    assert table[label("failed_share")].iloc[0].startswith("100.0 (http_400 "), table.to_dict("records")
    findings = [m for m in texts(at.markdown) if "of requests failing: " in m]  # the 20 s window: answers too
    assert findings and re.match(r"\*\*\d+(\.\d)? % of requests failing: unexpected shape", findings[0]), findings
    assert not any("No traffic in the window" in i for i in texts(at.info))
