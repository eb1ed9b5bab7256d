"""A load whose every request the real server refuses stops itself and says why in the server's words: through the
dashboard's worker process (LoadController) and through the CLI. Also what Triton 2.51 counts of such refusals.

The failures come the way users meet them: a config change the running traffic no longer fits (gpu_sim's input
from [256] to [4] while the load sends [1,256])."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import tritonclient.http as http

from app.metrics.scrape import fetch_text, parse_metrics
from app.paths import ROOT
from loadgen.controller import LoadController
from loadgen.spec import LoadSpec
from tests.helpers import wait_until
from tests.loadgen.failing import REFUSAL, narrow_gpu_sim


def counters(triton) -> tuple[float, float]:
    """Return gpu_sim's (nv_inference_request_success, nv_inference_request_failure of every reason)."""
    scrape = parse_metrics(fetch_text(triton.endpoint.metrics_url), 0.0).models["gpu_sim"]
    return scrape.counters.get("nv_inference_request_success", 0.0), sum(scrape.failures.values())


def test_the_dashboards_run_stops_itself_once_every_request_fails(triton, restore_model):
    restore_model("gpu_sim")
    ctl = LoadController(triton.url)
    try:
        ctl.start(LoadSpec(model="gpu_sim", concurrency=2, duration_s=120.0))
        wait_until(lambda: ctl.snapshot(0).summary.get("all", {}).get("ok", 0) > 20, 30, "answers before the change")
        counted = counters(triton)[1]
        narrow_gpu_sim(triton)
        assert ctl.wait(60), "the failing run did not stop itself"
        snap = ctl.snapshot(0)
        end = snap.started_at + snap.elapsed_s
        texts = ctl.window(snap.started_at, end + 1)["all"]["error_texts"]["http_400"]
        failing = ctl.window(texts["first_t"] + 1, end + 1)["all"]  # the whole seconds after the first refusal
    finally:
        ctl.close()
    stopped_after = end - texts["first_t"]
    print(f"stopped {stopped_after:.1f} s after the first refusal: {snap.error!r}; over the failing seconds "
          f"{failing['failed']:,} failed of {failing['failed'] + failing['ok']:,} ended; texts {texts}")
    assert 10.0 <= stopped_after < 20.0, stopped_after  # the streak's 10 s, then a drain of requests failing fast
    assert snap.error.startswith("Stopped: every request failed for 10 s ("), snap.error
    assert REFUSAL in snap.error and REFUSAL in texts["first"] and REFUSAL in texts["latest"], snap.error
    assert failing["failed_share"] == 1.0 and failing["failed"] >= 5 and failing["ok"] == 0
    assert REFUSAL in failing["error_texts"]["http_400"]["latest"]
    # Triton 2.51 refuses a wrong shape before the model runs and counts it nowhere in /metrics: one good request
    # after the run, once /metrics shows it, proves the scrape is newer than every refusal.
    answered = counters(triton)[0]
    http.InferenceServerClient(triton.endpoint.host_port).infer("gpu_sim", [narrow_input()])
    wait_until(lambda: counters(triton)[0] > answered, 10, "the good request in /metrics")
    assert counters(triton)[1] == counted, "Triton now counts shape refusals: update app.ui.traffic.failures' note"


def narrow_input() -> http.InferInput:
    """Return one row of the narrowed gpu_sim's input."""
    inp = http.InferInput("INPUT", [1, 4], "FP32")
    inp.set_data_from_numpy(np.ones((1, 4), np.float32))
    return inp


def test_the_cli_run_stops_itself_and_prints_the_servers_words(triton, restore_model, tmp_path):
    restore_model("gpu_sim")
    spec = tmp_path / "open.yaml"
    spec.write_text("model: gpu_sim\nmode: open\nrate: 300\nduration_s: 120\nstop_when_all_fail_s: 2\n")  # event loop
    answered = counters(triton)[0]
    cli = subprocess.Popen([sys.executable, "-m", "loadgen", "run", "--url", triton.url, "--spec", str(spec)],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: counters(triton)[0] > answered + 20, 30, "the CLI's answers before the change")
        narrow_gpu_sim(triton)
        _, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()  # the process this test started
            cli.wait(5)
    print(f"exit {cli.returncode}: {err.strip()!r}")
    assert cli.returncode == 2 and err.startswith("error: every request failed for 2 s ("), err
    assert REFUSAL in err
