"""Failing traffic is loud on a page (app/ui/traffic/failures.py and where it is drawn): the failure tile, the running
status in warning colours, the status table's column, the server's own words and count, the diagnosis's finding."""
from __future__ import annotations

import re

from app.metrics.catalog import label
from loadgen.spec import LoadSpec
from tests.unit.ui.apptest import metric, open_page, texts

REFUSAL = "unexpected shape for input 'INPUT' for model 'gpu_sim'. Expected [-1,4], got [1,256]"


def test_a_load_every_request_of_fails_is_loud_on_the_page(on_fake):
    on_fake.refuse_requests("gpu_sim", REFUSAL)  # e.g. a config change the running load no longer fits
    on_fake.start_traffic(LoadSpec(model="gpu_sim", concurrency=1, duration_s=600, stop_when_all_fail_s=None),
                          ran_s=22)
    at = open_page("lab_pages/diagnosis.py")
    warnings = texts(at.warning)
    assert metric(at, label("failed_share")) == "100.0"
    assert any(w.startswith("**Running — 100 % of requests failing**") for w in warnings), warnings
    assert any(w.startswith("**100 % of requests failing**") and REFUSAL in w for w in warnings), warnings  # live
    status = next(w for w in warnings if w.startswith("**Requests are failing"))
    assert "`http_400` ×" in status and REFUSAL in status and "Server side (`gpu_sim`" in status, status
    assert "only the client sees these" in status  # Triton counts no request it refuses before the model runs
    table = next(t.value for t in at.dataframe if label("failed_share") in t.value.columns)
    assert table[label("failed_share")].iloc[0].startswith("100.0 (http_400 "), table.to_dict("records")
    findings = [m for m in texts(at.markdown) if "of requests failing: " in m]
    assert findings and re.match(r"\*\*100(\.0)? % of requests failing: unexpected shape", findings[0]), findings
    assert not any("No traffic in the window" in i for i in texts(at.info))
