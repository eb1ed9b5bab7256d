"""The autopilot's parts around its rules: the GPU room it reads from a server's /metrics (the GPU panel's own fit
check), the instances each second of a steered trace served, and the command line's refusals before any server."""
from __future__ import annotations

import http.server
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from app.autopilot.job import gpu_room
from app.autopilot.steered import count_at, served_counts
from app.config.settings import InstanceGroup, Kind, ModelSettings
from app.cli.experiments import main

GIB = 2**30


def gpu_text(used_gib: float, total_gib: float = 16.0) -> str:
    return ("# TYPE nv_gpu_memory_used_bytes gauge\n"
            f'nv_gpu_memory_used_bytes{{gpu_uuid="GPU-0"}} {used_gib * GIB:.0f}\n'
            "# TYPE nv_gpu_memory_total_bytes gauge\n"
            f'nv_gpu_memory_total_bytes{{gpu_uuid="GPU-0"}} {total_gib * GIB:.0f}\n')


@pytest.fixture
def metrics_server():
    """A /metrics on 127.0.0.1 whose text the test sets (what a GPU Triton exports)."""
    page = {"text": ""}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            body = page["text"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield page, f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


@dataclass
class FakeLab:
    """What gpu_room reads of a lab: the metrics URL, the memory seen per count, whether a reload is under way."""

    metrics_url: str
    gpu_memory: dict = field(default_factory=dict)

    def __post_init__(self):
        self.endpoint = SimpleNamespace(metrics_url=self.metrics_url)
        self.markers = SimpleNamespace(reloading=lambda model: False)


def on_gpu(count: int) -> ModelSettings:
    return ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(count=count, kind=Kind.GPU),))


def test_the_gpu_room_is_learnt_from_two_counts_and_says_when_one_more_does_not_fit(metrics_server):
    page, url = metrics_server
    lab = FakeLab(url)
    page["text"] = gpu_text(used_gib=6.0)  # 1 instance: 6 GiB used of 16
    assert gpu_room(lab, "m", on_gpu(1)) == ""  # one count seen: the size of an instance is not known yet
    page["text"] = gpu_text(used_gib=11.0)  # 2 instances: 5 GiB each, 5 GiB free — one more just fits
    assert gpu_room(lab, "m", on_gpu(2)) == ""
    page["text"] = gpu_text(used_gib=13.0)  # something else took 2 GiB: 3 GiB free for a 5-6 GiB instance
    words = gpu_room(lab, "m", on_gpu(2))
    assert "one more instance needs about" in words and "it would not load" in words, words
    assert lab.gpu_memory["m"] == {1: 6.0 * GIB, 2: 13.0 * GIB}


def test_a_cpu_model_or_a_server_without_gpus_has_room(metrics_server):
    page, url = metrics_server
    page["text"] = gpu_text(used_gib=15.9)
    cpu = ModelSettings(max_batch_size=8, instance_groups=(InstanceGroup(count=2, kind=Kind.CPU),))
    assert gpu_room(FakeLab(url), "m", cpu) == ""
    page["text"] = "# TYPE nv_inference_count counter\n"
    assert gpu_room(FakeLab(url), "m", on_gpu(2)) == ""
    assert gpu_room(FakeLab("http://127.0.0.1:9/metrics"), "m", on_gpu(2)) == ""  # nothing answers: no claim


def test_each_second_counts_the_instances_applied_before_it():
    changes = [(100.0, 3), (130.0, 2)]
    assert [count_at(changes, 1, t) for t in (99.5, 100.5, 129.9, 130.0, 131.0)] == [1, 3, 3, 2, 2]
    assert count_at([], 4, 50.0) == 4
    # a recorded window's changes: a stepwise add's every reload, a single change, nothing applied
    add = {"decision": {"knobs": {"instance_count": 3}}, "applied_t": 101.4, "reloads": [[100.2, 2], [101.4, 3]]}
    one = {"decision": {"knobs": {"instance_count": 2}}, "applied_t": 130.0}
    refused = {"decision": {"knobs": {"instance_count": 2}}}
    delay = {"decision": {"knobs": {"max_queue_delay_microseconds": 100}}, "applied_t": 140.0}
    served = [c for rec in (add, one, refused, delay) for c in served_counts(rec)]
    assert served == [(100.2, 2), (101.4, 3), (130.0, 2)], served
    assert [count_at(served, 1, t) for t in (100.0, 100.5, 101.5, 131.0)] == [1, 2, 3, 2]


@pytest.mark.parametrize("argv, words", [
    (["--sla-ms", "50", "--rate", "100", "--min-instances", "3", "--max-instances", "2"],
     "min_instances is 3, above max_instances 2"),
    (["--sla-ms", "0", "--rate", "100"], "sla_p99_ms is 0"),
    (["--sla-ms", "50", "--trace", "no_such_trace"], "rate_trace 'no_such_trace'"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "0.5"], "plays 2 h"),
    (["--sla-ms", "50", "--rate", "100", "--report", "x.html"], "--report is for studies"),
    (["--sla-ms", "50", "--rate", "100", "--dwell-s", "1"], "dwell_s is 1 s"),
    (["--sla-ms", "50", "--rate", "100", "--forecast", "same"], "--forecast needs --trace"),
    (["--sla-ms", "50", "--rate", "100", "--instance-rps", "300"], "give --forecast too"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "nope"], "rate_trace 'nope'"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "same", "--lead-s", "0"],
     "lead_s 0"),
    (["--sla-ms", "50", "--trace", "flash_crowd", "--compress", "30", "--forecast", "diurnal",
      "--instance-rps", "-5"], "instance_rps -5"),
])
def test_bad_arguments_are_refused_in_words_before_any_server(argv, words, capsys):
    assert main(["autopilot", "--model", "gpu_sim", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err, err
