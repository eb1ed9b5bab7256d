"""Load and unload models through Triton's model control API — over gRPC, so a reload never stalls HTTP inference.

Why gRPC: Triton's HTTP server (2.51, and still in 25.06) runs a repository load *synchronously on the evhtp
worker thread* that accepted it, and evhtp hands connections to whichever worker is idle first, so the
inference connections of a closed-loop client often share that one worker. Every inference on them then
waits for the whole load (triton-inference-server/server#8958, #8635). Measured here (bench/apply_stall.py):
with the load sent over HTTP, 8 closed-loop HTTP clients got no answer for 1.34–1.39 s per reload in most
server starts; sent over gRPC, the longest gap stayed at the batching interval. The gRPC server uses its own
threads, so the HTTP inference path never waits on a load.

When the server has no reachable gRPC endpoint (a remote server that only exposes HTTP), the HTTP API is
used and `transport` says so, so the page can say that Applies may stall HTTP traffic on that server.

Every call carries the endpoint's control key (app/server/control_key.py): the servers the lab starts refuse
model-repository calls without it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

from app.server.control_key import LOCKED_FIX, is_locked
from app.server.endpoint import Endpoint

# gRPC status codes that mean "no answer", not "the server refused": the load may still be running there.
_NO_ANSWER = ("DEADLINE_EXCEEDED", "UNAVAILABLE", "CANCELLED")
PROBE_TIMEOUT_S = 2.0


class ControlError(Exception):
    """The server refused a load or unload; the message is the server's."""


class ControlTimeout(ControlError):
    """No answer within the time limit (or the connection dropped): the operation may still run on the server."""


class ControlDisabled(ControlError):
    """The server refuses the load API: it runs with --model-control-mode none or poll (Triton says "polling")."""


class ControlLocked(ControlError):
    """The server's model-repository API wants a key the lab did not send (or a different one)."""


# Triton's answer to a load or unload in modes none and poll alike (2.51; gRPC status UNAVAILABLE, HTTP 400).
DISABLED_TEXT = "not allowed if polling is enabled"


@dataclass(frozen=True)
class Transport:
    """Which API carries model control, and why."""

    name: str  # "grpc" or "http"
    why: str


class ModelControl:
    """Model control for one server: load (optionally with a config override) and unload, with a time limit."""

    def __init__(self, endpoint: Endpoint, prefer_grpc: bool = True) -> None:
        self.endpoint = endpoint
        self._prefer_grpc = prefer_grpc
        self._transport: Transport | None = None
        self._lock = threading.Lock()

    @property
    def transport(self) -> Transport:
        """Return the API in use; probes gRPC once (a live answer within 2 s) and falls back to HTTP."""
        with self._lock:
            if self._transport is None:
                self._transport = self._probe()
            return self._transport

    def load(self, model: str, config_json: str | None = None, timeout_s: float = 45.0) -> None:
        """Load (or reload) a model; block until the server answers or timeout_s passes."""
        if self.transport.name == "grpc":
            headers = self.endpoint.grpc_control_headers
            self._grpc(lambda c: c.load_model(model, headers=headers, config=config_json, client_timeout=timeout_s),
                       timeout_s)
        else:
            headers = self.endpoint.control_headers
            self._http(lambda c: c.load_model(model, headers=headers, config=config_json), timeout_s)

    def unload(self, model: str, timeout_s: float = 45.0) -> None:
        """Ask the server to unload a model."""
        if self.transport.name == "grpc":
            headers = self.endpoint.grpc_control_headers
            self._grpc(lambda c: c.unload_model(model, headers=headers, client_timeout=timeout_s), timeout_s)
        else:
            headers = self.endpoint.control_headers
            self._http(lambda c: c.unload_model(model, headers=headers), timeout_s)

    def _probe(self) -> Transport:
        if not self._prefer_grpc or not self.endpoint.grpc_url:
            return Transport("http", "gRPC not configured")
        try:
            with self._grpc_client() as client:
                if not client.is_server_live(client_timeout=PROBE_TIMEOUT_S):
                    return Transport("http", f"gRPC {self.endpoint.grpc_url} says the server is not live")
                if not self._same_server(client):
                    return Transport("http", f"gRPC {self.endpoint.grpc_url} answers for another server (its models "
                                             "differ from the HTTP endpoint's): set TRITON_GRPC_URL to this server's "
                                             "gRPC address; loads go over HTTP meanwhile")
                return Transport("grpc", f"gRPC {self.endpoint.grpc_url}")
        except Exception as exc:  # noqa: BLE001 - any failure means: use HTTP, and say why
            if isinstance(exc, InferenceServerException) and is_locked(exc.message() or str(exc)):
                return Transport("http", f"gRPC {self.endpoint.grpc_url} refused its repository index: {LOCKED_FIX}")
            return Transport("http", f"gRPC {self.endpoint.grpc_url} did not answer ({_short(exc)}); "
                                     "loads over HTTP can stall HTTP inference while they run")

    def _same_server(self, client) -> bool:
        """Return True when the gRPC endpoint lists the same model folders as the HTTP one: a guessed port must not
        send a load to another server (names only: a state may change between the two answers)."""
        grpc_index = client.get_model_repository_index(headers=self.endpoint.grpc_control_headers, as_json=True,
                                                       client_timeout=PROBE_TIMEOUT_S)
        http = triton_http.InferenceServerClient(self.endpoint.host_port, network_timeout=PROBE_TIMEOUT_S,
                                                 ssl=self.endpoint.http_url.startswith("https"))
        try:
            http_index = http.get_model_repository_index(headers=self.endpoint.control_headers)
        finally:
            http.close()
        return {m.get("name") for m in grpc_index.get("models", [])} == {m.get("name") for m in http_index}

    def _grpc_client(self) -> triton_grpc.InferenceServerClient:
        return triton_grpc.InferenceServerClient(_grpc_target(self.endpoint.grpc_url))

    def _grpc(self, call, timeout_s: float) -> None:
        try:
            with self._grpc_client() as client:
                call(client)
        except InferenceServerException as exc:
            _raise_refusal(exc)
            if any(code in str(exc.status() or "") for code in _NO_ANSWER):
                raise ControlTimeout(f"no answer within {timeout_s:g} s ({_short(exc)})") from exc
            raise ControlError(exc.message() or str(exc)) from exc

    def _http(self, call, timeout_s: float) -> None:
        client = triton_http.InferenceServerClient(self.endpoint.host_port, network_timeout=timeout_s,
                                                   ssl=self.endpoint.http_url.startswith("https"))
        try:
            call(client)
        except InferenceServerException as exc:
            _raise_refusal(exc)
            raise ControlError(exc.message() or str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - a time-out or a dropped connection: the load may still run
            raise ControlTimeout(f"no answer within {timeout_s:g} s ({_short(exc)})") from exc
        finally:
            client.close()


def _raise_refusal(exc: InferenceServerException) -> None:
    """Raise ControlLocked when the server wants a key, ControlDisabled when its load API is off (gRPC calls both
    UNAVAILABLE: they are refusals, not time-outs)."""
    text = exc.message() or str(exc)
    if is_locked(text):
        raise ControlLocked(f"{LOCKED_FIX} ({_short(exc)})") from exc
    if DISABLED_TEXT in text:
        raise ControlDisabled(
            f"the server refuses to load models ({_short(exc)}): it runs with --model-control-mode=none "
            "(Triton's default) or poll; restart it with --model-control-mode=explicit") from exc


def _grpc_target(url: str) -> str:
    """Return host:port from a gRPC address that may carry a scheme."""
    return url.split("://", 1)[-1].rstrip("/")


def _short(exc: BaseException) -> str:
    text = (exc.message() if isinstance(exc, InferenceServerException) else None) or str(exc) or type(exc).__name__
    return " ".join(text.split())[:200]
