"""A restart of a server the lab started: it asks for the same ports, and follows the server where it had to move."""
from __future__ import annotations

from dataclasses import dataclass

from app.lab.serving_verbs import ServingVerbs
from app.server.endpoint import Endpoint
from loadgen.spec import LoadSpec, Mode


@dataclass
class _Options:
    http_port: int | None = None
    grpc_port: int | None = None
    metrics_port: int | None = None


class _Server:
    """A server the lab started: restart() comes back on the ports asked for, or where it is told it had to go."""

    kind = "embedded"

    def __init__(self, moved_to: Endpoint | None = None) -> None:
        self.options, self.asked, self.moved_to = _Options(), None, moved_to

    def restart(self) -> Endpoint:
        o = self.options
        self.asked = (o.http_port, o.grpc_port, o.metrics_port)
        return self.moved_to or Endpoint(f"http://127.0.0.1:{o.http_port}", f"127.0.0.1:{o.grpc_port}",
                                         f"http://127.0.0.1:{o.metrics_port}/metrics")

    def log_tail(self, lines: int = 40) -> str:
        return ""


def test_a_restart_asks_for_the_ports_it_had_and_keeps_the_endpoint(fake):
    before = fake._endpoint
    fake._server = server = _Server()
    fake.start_traffic(LoadSpec(mode=Mode.CLOSED, concurrency=2, model="gpu_sim", duration_s=None), ran_s=3)
    ServingVerbs.restart(fake, resume_traffic=True)
    http, grpc, metrics = server.asked
    assert (f"http://127.0.0.1:{http}", f"127.0.0.1:{grpc}", f"http://127.0.0.1:{metrics}/metrics") == (
        before.http_url, before.grpc_url, before.metrics_url), (server.asked, before)
    assert fake._endpoint == before and fake.traffic().running, fake._endpoint


def test_a_server_that_had_to_move_is_followed_by_every_part(fake):
    """Another process took one of its ports while it was down (a shared machine): it came back elsewhere, and the
    config service, the load generator and the poller go where it is."""
    moved = Endpoint("http://127.0.0.1:48735", "127.0.0.1:56549", "http://127.0.0.1:51491/metrics")
    fake._server = _Server(moved_to=moved)
    ServingVerbs.restart(fake)
    assert fake._endpoint == moved and fake._config.endpoint == moved and fake._metrics.endpoint == moved
    assert (fake._load.url, fake._load.grpc_url) == (moved.http_url, moved.grpc_url), fake._load.url
