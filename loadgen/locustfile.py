"""The lab's traffic on Locust's distributed runner: `locust -f loadgen/locustfile.py` with --master and --worker.

Each Locust user keeps one request in flight (closed loop; think time 0 unless TBL_LOCUST_WAIT_S) and sends
the load generator's own requests: the traffic classes of a LoadSpec file (TBL_LOCUST_SPEC; default one
class on gpu_sim) with their shares, priorities, client and server timeouts, shapes and retries,
pre-encoded once per worker (loadgen.classes.prepare_class) and sent by the generator's own request path for
threads (loadgen.client.BlockingPath: framing, timeouts, outcomes, retries - cooperative under gevent). Locust
sees one entry per attempt under its traffic class's name ("retry" for attempts after the first), an attempt
that failed as a failure named by its kind (queue_full, client_timeout, ...).

    locust -f loadgen/locustfile.py --master --host http://127.0.0.1:8000 --users 16 --spawn-rate 16
    locust -f loadgen/locustfile.py --worker --master-host MASTER    # on every load machine
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from random import Random
from urllib.parse import urlparse

from locust import User, constant, task

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # Locust loads this file alone: find the checkout

from loadgen.classes import ClassPicker, prepare_classes
from loadgen.client import BlockingPath
from loadgen.connection import BlockingConnection
from loadgen.inputs.metadata import fetch_model
from loadgen.outcome import Outcome
from loadgen.records import Record, RecordBus
from loadgen.spec import LoadSpec
from loadgen.specfile import load_spec


class ShedError(Exception):
    """A request that did not end OK, named by its kind for Locust's failure table."""


def _spec() -> LoadSpec:
    path = os.environ.get("TBL_LOCUST_SPEC")
    return load_spec(path) if path else LoadSpec(model=os.environ.get("TBL_LOCUST_MODEL", "gpu_sim"))


_prepared: dict[str, tuple] = {}  # per host: (classes, shares), built once per worker process


def _classes(host: str):
    if host not in _prepared:
        spec = _spec()
        infos = {m: fetch_model(host, m) for m in {spec.class_model(c) for c in spec.classes}}
        prepared = prepare_classes(spec, infos, urlparse(host).netloc, Random(spec.seed))
        _prepared[host] = ([prepared[c.name] for c in spec.classes], [c.share for c in spec.classes])
    return _prepared[host]


class TritonUser(User):
    """One request in flight at a time, from the lab's traffic classes."""

    wait_time = constant(float(os.environ.get("TBL_LOCUST_WAIT_S", "0")))

    def on_start(self) -> None:
        url = urlparse(self.host)
        classes, shares = _classes(self.host)
        self.rng = Random()  # noqa: S311 - traffic mix, not security
        self.picker = ClassPicker(classes, shares, self.rng)
        self.conn = BlockingConnection(url.hostname, url.port or 80)
        self.path = BlockingPath(RecordBus([self._report], batch=1), rng=self.rng)

    def on_stop(self) -> None:
        self.path.aborted.set()
        self.conn.close()

    @task
    def infer(self) -> None:
        cls = self.picker.pick()
        self.path.send(self.conn, cls.target, cls.pick(self.rng))

    def _report(self, records: list[Record]) -> None:
        for r in records:
            self.environment.events.request.fire(
                request_type="infer" if r.attempt == 1 else "retry", name=r.cls, response_time=r.latency_s * 1000.0,
                response_length=0, exception=None if r.outcome is Outcome.OK else ShedError(r.error),
                context={"model": r.model})
