"""A load whose every request the real server refuses stops itself and says why in the server's words: through the
dashboard's worker process (LoadController) and through the CLI, side by side. Also what Triton 2.51 counts of such
refusals.

The failures come the way users meet them: a config change the running traffic no longer fits (gpu_sim's input
from [256] to [4] while both loads send [1,256]). The streak's arithmetic is tested on an injected clock:
tests/unit/loadgen/test_watchdog.py."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import tritonclient.http as http

from app.metrics.scrape import fetch_text, parse_metrics
from app.paths import ROOT
from loadgen.controller import LoadController
from loadgen.spec import LoadSpec
from tests.contract.loadgen.failing import REFUSAL, narrow_gpu_sim
from tests.helpers import wait_until


def counters(triton) -> tuple[float, float]:
    """Return gpu_sim's (nv_inference_request_success, nv_inference_request_failure of every reason)."""
    scrape = parse_metrics(fetch_text(triton.endpoint.metrics_url), 0.0).models["gpu_sim"]
    return scrape.counters.get("nv_inference_request_success", 0.0), sum(scrape.failures.values())


def narrow_input() -> http.InferInput:
    """Return one row of the narrowed gpu_sim's input."""
    inp = http.InferInput("INPUT", [1, 4], "FP32")
    inp.set_data_from_numpy(np.ones((1, 4), np.float32))
    return inp


def test_a_run_whose_every_request_fails_stops_itself_with_the_servers_words(triton, restore_model, tmp_path):
    restore_model("gpu_sim")
    spec = tmp_path / "open.yaml"  # the CLI's open loop (the event loop's path) beside the dashboard's closed loop
    spec.write_text("model: gpu_sim\nmode: open\nrate: 100\nduration_s: 120\nstop_when_all_fail_s: 2\n")
    ctl = LoadController(triton.url)
    cli = subprocess.Popen([sys.executable, "-m", "loadgen", "run", "--url", triton.url, "--spec", str(spec)],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        answered = counters(triton)[0]
        ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=120.0, stop_when_all_fail_s=2.0))
        wait_until(lambda: ctl.snapshot(0).summary.get("all", {}).get("ok", 0) > 20, 30, "the dashboard's answers")
        wait_until(lambda: counters(triton)[0] > answered + 60, 30, "the CLI's answers too")
        counted = counters(triton)[1]
        narrow_gpu_sim(triton)
        assert ctl.wait(60), "the dashboard's failing run did not stop itself"
        _, err = cli.communicate(timeout=60)
        snap = ctl.snapshot(0)
        end = snap.started_at + snap.elapsed_s
        texts = ctl.window(snap.started_at, end + 1)["all"]["error_texts"]["http_400"]
        failing = ctl.window(texts["first_t"] + 1, end + 1)["all"]  # the whole seconds after the first refusal
    finally:
        ctl.close()
        if cli.poll() is None:
            cli.kill()  # the process this test started
            cli.wait(5)
    assert snap.error.startswith("Stopped: every request failed for 2 s ("), snap.error
    assert REFUSAL in snap.error and REFUSAL in texts["first"] and REFUSAL in texts["latest"], snap.error
    assert failing["failed_share"] == 1.0 and failing["ok"] == 0, failing
    assert REFUSAL in failing["error_texts"]["http_400"]["latest"]
    assert cli.returncode == 2 and err.startswith("error: every request failed for 2 s ("), err
    assert REFUSAL in err
    # Triton 2.51 refuses a wrong shape before the model runs and counts it nowhere in /metrics: one good request
    # after the runs, once /metrics shows it, proves the scrape is newer than every refusal.
    answered = counters(triton)[0]
    http.InferenceServerClient(triton.endpoint.host_port).infer("gpu_sim", [narrow_input()])
    wait_until(lambda: counters(triton)[0] > answered, 10, "the good request in /metrics")
    assert counters(triton)[1] == counted, "Triton now counts shape refusals: update app.ui.traffic.failures' note"
