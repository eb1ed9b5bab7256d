"""Capture real GPU evidence from a GPU machine: serve the GPU configs and save what Triton says.

Run where a GPU is at hand (the device machine of a task that has one, no registry needed):
    .venv/bin/python scripts/capture_gpu_evidence.py OUT_DIR
It starts the wheel's tritonserver with --model-config-name=gpu (each model's configs/gpu.pbtxt; models on
the Python backend — the wheel has no onnxruntime backend, so mlp's GPU config is recorded as not loadable),
sends gpu_sim traffic at 1 and then 2 KIND_GPU instances, and writes to OUT_DIR: metrics_idle.prom,
metrics_1_instance.prom, metrics_2_instances.prom, <model>.config.json, models.json and summary.json (GPUs
seen, memory per instance). On a machine without a GPU it says so (summary.json) and exits 2.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

import numpy as np
import tritonclient.http as http

from app.metrics.gpu import gpus_of, memory_per_instance
from app.paths import MODEL_REPOSITORY
from app.server.embedded import EmbeddedServer, ServerOptions, ServerStartError

PYTHON_MODELS = ("gpu_sim", "stream_acc", "token_sim")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def _traffic(client: http.InferenceServerClient, n: int = 200) -> None:
    data = np.ones((1, 256), dtype=np.float32)
    for _ in range(n):
        inp = http.InferInput("INPUT", [1, 256], "FP32")
        inp.set_data_from_numpy(data)
        client.infer("gpu_sim", [inp])


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tbl-gpu-") as tmp:
        repo = Path(tmp) / "model_repository"
        shutil.copytree(MODEL_REPOSITORY, repo, ignore=shutil.ignore_patterns("__pycache__"))
        server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None,
                                              metrics_port=None, models=("gpu_sim",), log_dir=Path(tmp),
                                              extra_args=("--model-config-name=gpu",)))
        try:
            endpoint = server.start()
        except ServerStartError as exc:
            reason = str(exc).strip().splitlines()[-1]
            (out / "summary.json").write_text(json.dumps({"gpus": [], "error": reason}, indent=1))
            print(f"no usable GPU here: the GPU configs did not load ({reason})")
            return 2
        summary: dict = {"loaded": {}, "memory_used_by_instances": {}}
        try:
            client = http.InferenceServerClient(endpoint.host_port)
            for model in (*PYTHON_MODELS, "mlp"):
                try:
                    client.load_model(model)
                    summary["loaded"][model] = "READY"
                    (out / f"{model}.config.json").write_text(json.dumps(client.get_model_config(model), indent=1))
                except Exception as exc:  # noqa: BLE001 - recorded: that is the evidence
                    summary["loaded"][model] = f"not loaded: {exc}"
            (out / "models.json").write_text(_get(f"{endpoint.http_url}/v2/repository/index"))
            (out / "metrics_idle.prom").write_text(_get(endpoint.metrics_url))
            for count in (1, 2):
                config = client.get_model_config("gpu_sim")
                config["instance_group"][0]["count"] = count
                client.load_model("gpu_sim", config=json.dumps(config))
                _traffic(client)
                text = _get(endpoint.metrics_url)
                (out / f"metrics_{count}_instance{'s' if count > 1 else ''}.prom").write_text(text)
                summary["memory_used_by_instances"][count] = sum(g.memory_used or 0 for g in gpus_of(text))
            gpus = gpus_of(_get(endpoint.metrics_url))
            summary["gpus"] = [g.__dict__ for g in gpus]
            summary["memory_per_instance_bytes"] = memory_per_instance(
                {int(k): v for k, v in summary["memory_used_by_instances"].items()})
            summary["server_log_tail"] = server.log_tail(60)
        finally:
            server.stop()
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "server_log_tail"}, indent=1, default=str))
    print("GPUs reported:", len(summary["gpus"]) or "none (no GPU on this machine, or no DCGM)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "gpu-evidence")))
