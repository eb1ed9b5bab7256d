"""A simulated Triton for the unit tier: /metrics and the statistics API from a small cost model, and the load
generator's records of the same requests, advanced one whole second at a time.

Not a model of Triton to trust (the twin, app/twin, is that): just enough, deterministic, for every page and
study to draw and act on a FakeLab with no server. A test may stop it answering (up), stop /metrics alone
(metrics_up: the statistics API stands in) or have it refuse every request to a model with Triton's words
(refusing). What is real around it: the metrics poller parses the text it answers, the load controller's statistics
take its records (tests/fakes/fake_lab.py).
"""
from __future__ import annotations

import json
import math
import random
import urllib.error
from dataclasses import dataclass, field

from app.config.model_config import ModelConfig
from app.server.endpoint import Endpoint
from app.config.read import settings_of
from loadgen.outcome import Outcome
from loadgen.records import Record
from loadgen.spec import LoadSpec, Mode

ENDPOINT = Endpoint("http://127.0.0.1:18000", "127.0.0.1:18001", "http://127.0.0.1:18002/metrics")  # nothing listens
COUNTER_NAMES = ("nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count",
                 "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
                 "nv_inference_compute_output_duration_us")


@dataclass
class SimModel:
    """One model's served config and cumulative counters (the statistics API's restart at a reload)."""

    config: ModelConfig
    counters: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTER_NAMES, 0.0))
    failures: dict[str, float] = field(default_factory=lambda: dict.fromkeys(("REJECTED", "CANCELED", "BACKEND",
                                                                              "OTHER"), 0.0))
    pending: float = 0.0
    backlog: float = 0.0  # requests waiting beyond what one second serves
    stats: dict = field(default_factory=dict)  # the statistics API's totals since the last (re)load

    def cost(self) -> tuple[int, int, float]:
        """Return (instances, batch size, µs one execution of that batch takes) as the config serves them."""
        settings = settings_of(self.config)
        instances = sum(g.count for g in settings.instance_groups) or 1
        params = {k: v.string_value for k, v in self.config.parameters.items()}
        base = float(params.get("compute_us_batch1", 2000) or 2000)
        exponent = float(params.get("compute_batch_exponent", 0.5) or 0.5)
        launch = float(params.get("launch_overhead_us", 300) or 300)
        batch = 1
        dyn = settings.dynamic_batching
        if dyn is not None and self.config.max_batch_size > 0:
            batch = max(1, min(self.config.max_batch_size, 1 + int(dyn.max_queue_delay_microseconds / 250)))
        return instances, batch, launch + base * batch ** exponent


class SimTriton:
    """Answer fetch(url) as a server's /metrics and statistics API do; advance(t, spec, run_t0) simulates [t-1, t)."""

    def __init__(self, metrics_url: str, http_url: str, configs: dict[str, ModelConfig], seed: int = 7) -> None:
        self.metrics_url, self.http_url = metrics_url, http_url.rstrip("/")
        self.models = {name: SimModel(config) for name, config in configs.items()}
        self.up = True
        self.metrics_up = True  # False: /metrics does not answer (the statistics API still does)
        self.refusing: dict[str, str] = {}  # model -> the words every request to it is refused with (HTTP 400)
        self._rng = random.Random(seed)

    def serve(self, name: str, config: ModelConfig) -> None:
        """Load a config (a reload): the statistics API starts from zero, /metrics keeps counting."""
        model = self.models.setdefault(name, SimModel(config))
        model.config, model.stats = config, {}

    def fetch(self, url: str, timeout_s: float = 2.0) -> str:
        """Return what the server answers at url (URLError while it is down)."""
        if not self.up:
            raise urllib.error.URLError("connection refused (the simulated server is down)")
        if url == self.metrics_url:
            if not self.metrics_up:
                raise urllib.error.URLError("connection refused (the simulated server's metrics port is off)")
            return self._metrics_text()
        if url.startswith(f"{self.http_url}/v2/models") and url.endswith("/stats"):
            return self._stats_json()
        raise urllib.error.URLError(f"the simulated server has nothing at {url}")

    def advance(self, t: float, spec: LoadSpec | None, run_t0: float | None) -> list[Record]:
        """Simulate the second ending at t (epoch s) of a run that began at run_t0; return its records."""
        if spec is None or run_t0 is None or spec.model not in self.models:
            return []
        model = self.models[spec.model]
        if spec.model in self.refusing:
            return self._refused(t, spec, run_t0)
        instances, batch, exec_us = model.cost()
        capacity = instances * batch / (exec_us / 1e6)  # requests a second the device can serve
        in_flight = spec.concurrency + sum(q.count for q in spec.sequences)  # closed loop: sequences are in flight too
        offered = spec.rate if spec.mode == Mode.OPEN else min(capacity, in_flight / (exec_us / 1e6))
        served = min(offered + model.backlog, capacity)
        model.backlog = max(0.0, model.backlog + offered - served)
        busy = min(0.95, offered / capacity)
        wait_us = exec_us * busy / (1 - busy) / instances + model.backlog / capacity * 1e6
        if batch > 1:
            wait_us += exec_us / 2
        n = int(served)
        records = []
        names = [c.name for c in spec.classes] + [q.name for q in spec.sequences] or ["default"]
        for i in range(n):
            sent = t - 1 - run_t0 + i / max(n, 1)
            latency = (wait_us + exec_us) / 1e6 * self._rng.expovariate(1.0) ** 0.5 * 1.1
            records.append(Record(names[i % len(names)], spec.model, 0, 0, sent, sent, latency, Outcome.OK, "", 1,
                                  False))
        c = model.counters
        for key, value in (("nv_inference_request_success", n), ("nv_inference_count", n),
                           ("nv_inference_exec_count", math.ceil(n / batch)),
                           ("nv_inference_request_duration_us", n * (wait_us + exec_us)),
                           ("nv_inference_queue_duration_us", n * wait_us),
                           ("nv_inference_compute_input_duration_us", n * 20.0),
                           ("nv_inference_compute_infer_duration_us", n * exec_us / batch),
                           ("nv_inference_compute_output_duration_us", n * 10.0)):
            c[key] += value
            model.stats[key] = model.stats.get(key, 0.0) + value
        sizes = model.stats.setdefault("batches", {})
        times = model.stats.setdefault("batch_ns", {})
        runs = math.ceil(n / batch)
        sizes[batch] = sizes.get(batch, 0) + runs
        times[batch] = times.get(batch, 0) + int(runs * exec_us * 1000)  # what one execution of the batch took
        model.pending = model.backlog
        return records

    def _refused(self, t: float, spec: LoadSpec, run_t0: float) -> list[Record]:
        """Every request of the second refused before the model runs (Triton counts none of them)."""
        n = int(spec.rate) if spec.mode == Mode.OPEN else 10 * (spec.concurrency + sum(q.count for q in spec.sequences))
        names = [c.name for c in spec.classes] + [q.name for q in spec.sequences] or ["default"]
        words = self.refusing[spec.model]
        return [Record(names[i % len(names)], spec.model, 0, 0, t - 1 - run_t0 + i / max(n, 1),
                       t - 1 - run_t0 + i / max(n, 1), 0.001, Outcome.ERROR, "http_400", 1, False, words)
                for i in range(n)]

    def _metrics_text(self) -> str:
        lines = []
        for name, model in sorted(self.models.items()):
            labels = f'model="{name}",version="1"'
            lines += [f"{key}{{{labels}}} {value:.0f}" for key, value in model.counters.items()]
            lines += [f'nv_inference_request_failure{{{labels},reason="{r}"}} {v:.0f}' for r, v in
                      model.failures.items()]
            lines.append(f"nv_inference_pending_request_count{{{labels}}} {model.pending:.0f}")
        lines.append('nv_cpu_utilization 0.5')
        return "\n".join(lines) + "\n"

    def _stats_json(self) -> str:
        out = []
        for name, model in sorted(self.models.items()):
            s = model.stats
            ns = lambda key: int(s.get(key, 0.0) * 1000)  # noqa: E731 - µs to ns
            count = int(s.get("nv_inference_request_success", 0))
            out.append({"name": name, "version": "1", "inference_count": int(s.get("nv_inference_count", 0)),
                        "execution_count": int(s.get("nv_inference_exec_count", 0)),
                        "inference_stats": {
                            "success": {"count": count, "ns": ns("nv_inference_request_duration_us")},
                            "fail": {"count": 0, "ns": 0},
                            "queue": {"count": count, "ns": ns("nv_inference_queue_duration_us")},
                            "compute_input": {"count": count, "ns": ns("nv_inference_compute_input_duration_us")},
                            "compute_infer": {"count": count, "ns": ns("nv_inference_compute_infer_duration_us")},
                            "compute_output": {"count": count, "ns": ns("nv_inference_compute_output_duration_us")}},
                        "batch_stats": [{"batch_size": size, "compute_infer": {
                            "count": execs, "ns": s.get("batch_ns", {}).get(size, 0)}}
                                        for size, execs in sorted(s.get("batches", {}).items())]})
        return json.dumps({"model_stats": out})
