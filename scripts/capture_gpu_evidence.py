"""Capture real GPU evidence from a GPU machine: serve the GPU configs and save what Triton says.

On the device machine of a task that has one, `scripts/gpu_evidence_device.sh` runs this on the Python
runtime carried in `.gpu-bundle/` (made here by `scripts/gpu_bundle.sh`); where the wheel is installed:
    python scripts/capture_gpu_evidence.py OUT_DIR [--cpu]
It starts the wheel's tritonserver with --model-config-name=gpu (each model's configs/gpu.pbtxt; models on
the Python backend — the wheel has no onnxruntime backend, so mlp's GPU config is recorded as not loadable),
sends gpu_sim traffic at 1 and then 2 instances, and writes to OUT_DIR 6 files (the device tool brings back
at most 8): metrics_idle.prom, metrics_1_instance.prom, metrics_2_instances.prom, configs.json (each model's
served config and the repository index), summary.json (GPUs seen, memory per instance, instances served,
answers counted, nvidia-smi's per-process memory, any error) and the server's log tritonserver-PORT.log.
Exit status: 0 done; 1 a step failed or SIGTERM came (summary.json holds the traceback); 2 the server did not start with
these configs (as on a machine without a GPU); 4 done, but the server reported no GPU. `--cpu` is the
rehearsal: the same steps on the default (CPU) configs. Only the standard library, numpy and
prometheus-client are imported (the carried runtime holds those).
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: the app package is beside it
    sys.path.insert(0, str(ROOT))

from app.metrics.gpu import gpus_of, memory_per_instance
from app.metrics.scrape import fetch_text, parse_metrics
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.start_errors import ServerStartError
from app.server.status import fetch_status

MODELS = ("gpu_sim", "stream_acc", "token_sim", "mlp")


class Triton:
    """The few calls of Triton's HTTP/REST protocol this capture makes (the device has no tritonclient); the
    model-repository ones carry the server's control key (control_headers: the lab's servers are locked)."""

    def __init__(self, http_url: str, metrics_url: str, control_headers: dict[str, str] | None = None) -> None:
        self.http_url, self.metrics_url = http_url, metrics_url
        self.control_headers = control_headers or {}

    def _call(self, path: str, body: dict | None = None, timeout_s: float = 120.0) -> str:
        data = json.dumps(body).encode() if body is not None else None
        headers = {**({"Content-Type": "application/json"} if data else {}),
                   **(self.control_headers if path.startswith("/v2/repository") else {})}
        request = urllib.request.Request(f"{self.http_url}{path}", data=data, method="POST" if data else "GET",
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as resp:
                return resp.read().decode()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{path}: HTTP {exc.code}: {exc.read().decode(errors='replace')[:500]}") from exc

    def load(self, model: str, config: dict | None = None) -> None:
        body = {"parameters": {"config": json.dumps(config)}} if config is not None else {}
        self._call(f"/v2/repository/models/{model}/load", body)

    def config(self, model: str) -> dict:
        return json.loads(self._call(f"/v2/models/{model}/config"))

    def index(self) -> list:
        return json.loads(self._call("/v2/repository/index", {}))

    def infer_gpu_sim(self) -> None:
        body = {"inputs": [{"name": "INPUT", "shape": [1, 256], "datatype": "FP32", "data": [1.0] * 256}]}
        answer = json.loads(self._call("/v2/models/gpu_sim/infer", body, timeout_s=30.0))
        if answer["outputs"][0]["data"][:3] != [1.0, 1.0, 1.0]:  # gpu_sim is the identity
            raise RuntimeError(f"gpu_sim answered {answer['outputs'][0]['data'][:3]}")

    def metrics(self) -> str:
        return fetch_text(self.metrics_url, timeout_s=10.0)

    def metrics_after(self, answered: int, timeout_s: float = 10.0) -> tuple[str, float | None]:
        """Return /metrics and its count of gpu_sim answers once that reaches `answered` (a count may land just
        after its answer) or timeout_s has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.metrics()
            model = parse_metrics(text, 0.0).models.get("gpu_sim")
            done = model.counters.get("nv_inference_request_success") if model else None
            if (done or 0.0) >= answered or time.monotonic() > deadline:
                return text, done
            time.sleep(0.05)


def _nvidia_smi_apps() -> str | None:
    """Return nvidia-smi's per-process GPU memory (independent of DCGM), None where there is no nvidia-smi."""
    try:
        run = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi: {exc}" if not isinstance(exc, FileNotFoundError) else None
    return (run.stdout + run.stderr).strip()


def settled_memory(metrics, timeout_s: float = 12.0, clock=time.monotonic, sleep=time.sleep) -> int:
    """Wait until the GPUs' memory gauges read the same twice, 1.2 s apart (Triton refreshes them each second,
    DCGM's watch may lag one more): a sample taken right after a reload can still show the old instances.
    `metrics` returns a /metrics text; return how many reads it took."""
    deadline = clock() + timeout_s
    last, reads = None, 0
    while True:
        now = [g.memory_used for g in gpus_of(metrics())]
        reads += 1
        if not now or now == last or clock() >= deadline:  # no GPU gauges: nothing to wait for
            return reads
        last = now
        sleep(1.2)


def capture(out: Path, cpu: bool = False, requests_per_step: int = 200) -> int:
    """Serve the GPU configs (the default ones with cpu), capture into out; return the exit status:
    0 done, 1 a step failed, 2 the server did not start with these configs, 4 done but no GPU reported."""
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"configs": "default (CPU rehearsal)" if cpu else "configs/gpu.pbtxt", "loaded": {},
                     "instances_served": {}, "answered": {}, "gpu_memory_used_total": {}, "gpus": [],
                     "nvidia_smi_apps": {}, "note": "gpu_memory_used_total is all the memory in use on the GPUs "
                     "(the server, every model's instances); memory_per_instance_bytes is its slope over gpu_sim's "
                     "instance counts. gpu_sim only sleeps (a labelled cost model): no weights, so what an instance "
                     "takes is whatever its Python backend stub holds on the GPU (maybe close to 0)"}

    def save() -> None:
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))

    with tempfile.TemporaryDirectory(prefix="tbl-gpu-") as tmp:
        repo = Path(tmp) / "model_repository"
        shutil.copytree(MODEL_REPOSITORY, repo, ignore=shutil.ignore_patterns("__pycache__"))
        server = EmbeddedServer(ServerOptions(  # its log goes to out: the evidence, and the diagnosis of a failure
            model_repository=repo, http_port=None, grpc_port=None, metrics_port=None, models=("gpu_sim",),
            log_dir=out, extra_args=() if cpu else ("--model-config-name=gpu",)))
        print(f"starting tritonserver with {summary['configs']}", flush=True)
        try:
            endpoint = server.start()
            unserved = [m for m in fetch_status(endpoint).models if m.name == "gpu_sim" and m.state != "READY"]
            if unserved:  # the server starts even when a model cannot load: that model's failure is the news
                model = unserved[0]
                raise ServerStartError(f"gpu_sim is {model.state or 'not loaded'}: {model.reason}\n{server.log_tail()}")
        except ServerStartError as exc:
            server.stop()
            summary["error"] = str(exc)
            save()
            print(f"the server did not start with {summary['configs']}:\n{exc}")
            return 2
        try:
            triton = Triton(endpoint.http_url, endpoint.metrics_url, endpoint.control_headers)
            configs: dict = {}
            for model in MODELS:
                try:
                    triton.load(model)
                    summary["loaded"][model] = "READY"
                    configs[model] = triton.config(model)
                except Stopped:
                    raise
                except Exception as exc:  # noqa: BLE001 - recorded: that is the evidence
                    summary["loaded"][model] = f"not loaded: {exc}"
                print(f"{model}: {summary['loaded'][model][:300]}", flush=True)
                save()
            configs["repository index"] = triton.index()
            (out / "configs.json").write_text(json.dumps(configs, indent=1))
            settled_memory(triton.metrics)
            (out / "metrics_idle.prom").write_text(triton.metrics())
            save()
            for count in (1, 2):
                config = triton.config("gpu_sim")
                config["instance_group"][0]["count"] = count
                triton.load("gpu_sim", config)
                summary["instances_served"][count] = [(g.get("kind"), g.get("count"), g.get("gpus"))
                                                      for g in triton.config("gpu_sim")["instance_group"]]
                for _ in range(requests_per_step):
                    triton.infer_gpu_sim()
                settled_memory(triton.metrics)
                text, summary["answered"][count] = triton.metrics_after(count * requests_per_step)
                (out / f"metrics_{count}_instance{'s' if count > 1 else ''}.prom").write_text(text)
                gpus = gpus_of(text)
                summary["gpu_memory_used_total"][count] = sum(g.memory_used or 0 for g in gpus) if gpus else None
                summary["nvidia_smi_apps"][count] = _nvidia_smi_apps()
                print(f"{count} instance(s): {summary['instances_served'][count]}, answered "
                      f"{summary['answered'][count]}, GPU memory used {summary['gpu_memory_used_total'][count]}",
                      flush=True)
                save()
            summary["gpus"] = [g.__dict__ for g in gpus_of(triton.metrics())]
            seen = {int(k): v for k, v in summary["gpu_memory_used_total"].items() if v is not None}
            summary["memory_per_instance_bytes"] = memory_per_instance(seen)
        except Exception:  # noqa: BLE001 - a failed step is recorded with its traceback and the server's log
            summary["error"] = traceback.format_exc()
            print(summary["error"])
            return 1
        finally:
            summary["server_log_tail"] = server.log_tail(80)
            server.stop()
            save()
    print(json.dumps({k: v for k, v in summary.items() if k != "server_log_tail"}, indent=1, default=str))
    print("GPUs reported:", len(summary["gpus"]) or "none (no GPU on this machine, or no DCGM)")
    return 0 if cpu or summary["gpus"] else 4


class Stopped(Exception):
    """SIGTERM came (the device script's time bound): the steps stop, what was seen is saved."""


def _on_sigterm(signum, frame) -> None:
    raise Stopped("stopped by SIGTERM (the device script's time bound)")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _on_sigterm)  # a bounded run still saves its summary and stops the server
    args = [a for a in argv if a != "--cpu"]
    return capture(Path(args[0] if args else "gpu-evidence"), cpu="--cpu" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
