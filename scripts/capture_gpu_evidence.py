"""Capture real GPU evidence from a GPU machine: serve the GPU configs and save what Triton says.

On the device machine of a task that has one (no registry there, Python 3.12 with numpy and
prometheus-client, no tritonclient), `scripts/gpu_evidence_device.sh` runs this with the server carried in
`.gpu-bundle/` (made here by `scripts/gpu_bundle.sh`); where the nvidia-pytriton wheel is installed:
    python scripts/capture_gpu_evidence.py OUT_DIR [--cpu]
It starts the wheel's tritonserver with --model-config-name=gpu (each model's configs/gpu.pbtxt; models on
the Python backend — the wheel has no onnxruntime backend, so mlp's GPU config is recorded as not loadable),
sends gpu_sim traffic at 1 and then 2 instances, and writes to OUT_DIR (5 files: the device tool brings back
at most 8): metrics_idle.prom, metrics_1_instance.prom, metrics_2_instances.prom, configs.json (each model's
served config and the repository index) and summary.json (GPUs seen, memory per instance, instance counts
served, the server's log tail). Without a GPU the GPU configs do not load: it says so in summary.json and
exits 2. `--cpu` is the rehearsal: the same steps on the default (CPU) configs, exit 0 with no GPUs seen.
Only the standard library, numpy and prometheus-client are used (all three are on the device machine).
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: the app package is beside it
    sys.path.insert(0, str(ROOT))

from app.metrics.gpu import gpus_of, memory_per_instance
from app.metrics.scrape import parse_metrics
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions, ServerStartError

MODELS = ("gpu_sim", "stream_acc", "token_sim", "mlp")
FILES = ("metrics_idle.prom", "metrics_1_instance.prom", "metrics_2_instances.prom", "configs.json", "summary.json")


class Triton:
    """The few calls of Triton's HTTP/REST protocol this capture makes (the device has no tritonclient)."""

    def __init__(self, http_url: str, metrics_url: str) -> None:
        self.http_url, self.metrics_url = http_url, metrics_url

    def _call(self, path: str, body: dict | None = None, timeout_s: float = 120.0) -> str:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.http_url}{path}", data=data, method="POST" if data else "GET",
                                         headers={"Content-Type": "application/json"} if data else {})
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
        with urllib.request.urlopen(self.metrics_url, timeout=10) as resp:
            return resp.read().decode()

    def metrics_after(self, answered: int, timeout_s: float = 10.0) -> str:
        """Return /metrics once it counts `answered` gpu_sim answers (a count may land just after its answer)."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.metrics()
            model = parse_metrics(text, 0.0).models.get("gpu_sim")
            done = model.counters.get("nv_inference_request_success", 0.0) if model else 0.0
            if done >= answered or time.monotonic() > deadline:
                return text
            time.sleep(0.05)


def capture(out: Path, cpu: bool = False, requests_per_step: int = 200) -> int:
    """Serve the GPU configs (the default ones with cpu), capture into out; return the exit status."""
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"configs": "default (CPU rehearsal)" if cpu else "configs/gpu.pbtxt", "loaded": {},
                     "instances_served": {}, "memory_used_by_instances": {}, "gpus": []}
    with tempfile.TemporaryDirectory(prefix="tbl-gpu-") as tmp:
        repo = Path(tmp) / "model_repository"
        shutil.copytree(MODEL_REPOSITORY, repo, ignore=shutil.ignore_patterns("__pycache__"))
        server = EmbeddedServer(ServerOptions(
            model_repository=repo, http_port=None, grpc_port=None, metrics_port=None, models=("gpu_sim",),
            log_dir=Path(tmp), extra_args=() if cpu else ("--model-config-name=gpu",)))
        try:
            endpoint = server.start()
        except ServerStartError as exc:
            reason = str(exc).strip().splitlines()[-1]
            summary["error"] = reason
            (out / "summary.json").write_text(json.dumps(summary, indent=1))
            print(f"no usable GPU here: the GPU configs did not load ({reason})")
            return 2
        try:
            triton = Triton(endpoint.http_url, endpoint.metrics_url)
            configs: dict = {}
            for model in MODELS:
                try:
                    triton.load(model)
                    summary["loaded"][model] = "READY"
                    configs[model] = triton.config(model)
                except Exception as exc:  # noqa: BLE001 - recorded: that is the evidence
                    summary["loaded"][model] = f"not loaded: {exc}"
            configs["repository index"] = triton.index()
            (out / "configs.json").write_text(json.dumps(configs, indent=1))
            (out / "metrics_idle.prom").write_text(triton.metrics())
            for count in (1, 2):
                config = triton.config("gpu_sim")
                config["instance_group"][0]["count"] = count
                triton.load("gpu_sim", config)
                summary["instances_served"][count] = [g.get("count") for g in
                                                      triton.config("gpu_sim")["instance_group"]]
                for _ in range(requests_per_step):
                    triton.infer_gpu_sim()
                text = triton.metrics_after(count * requests_per_step)
                (out / f"metrics_{count}_instance{'s' if count > 1 else ''}.prom").write_text(text)
                summary["memory_used_by_instances"][count] = sum(g.memory_used or 0 for g in gpus_of(text))
            summary["gpus"] = [g.__dict__ for g in gpus_of(triton.metrics())]
            summary["memory_per_instance_bytes"] = memory_per_instance(
                {int(k): v for k, v in summary["memory_used_by_instances"].items()})
            summary["server_log_tail"] = server.log_tail(60)
        finally:
            server.stop()
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "server_log_tail"}, indent=1, default=str))
    print("GPUs reported:", len(summary["gpus"]) or "none (no GPU on this machine, or no DCGM)")
    return 0


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--cpu"]
    return capture(Path(args[0] if args else "gpu-evidence"), cpu="--cpu" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
