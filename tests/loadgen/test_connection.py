"""The HTTP/1.1 response reader, fed bytes directly (no server needed for parsing)."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from loadgen.connection import Connection, ProtocolError, Response
from loadgen.outcome import Outcome, classify, classify_exception
from loadgen.payload import decode_outputs, http_request, infer_body

OK = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nInference-Header-Content-Length: 5\r\n"
    b"Content-Length: 9\r\n\r\n{\"a\":1}xy"
)


class FakeTransport:
    def __init__(self):
        self.written, self.aborted = [], False

    def get_extra_info(self, name):
        return None

    def write(self, data):
        self.written.append(data)

    def abort(self):
        self.aborted = True


def connected() -> tuple[Connection, FakeTransport]:
    conn, transport = Connection(), FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def test_reads_a_response_split_anywhere():
    async def main():
        body = (
            b"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 3\r\ncontent-length: 7\r\n\r\n{ }abcd"
        )
        results = []
        for cut in range(1, len(body)):
            conn, transport = connected()
            fut = conn.request(b"GET")
            conn.data_received(body[:cut])
            assert not fut.done()
            conn.data_received(body[cut:])
            results.append(await fut)
        return results, transport

    results, transport = asyncio.run(main())
    assert set(results) == {Response(200, b"{ }abcd", 3)}
    assert transport.written == [b"GET"]


def test_keeps_alive_across_requests():
    async def main():
        conn, _ = connected()
        first = conn.request(b"1")
        conn.data_received(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno")
        second = conn.request(b"2")
        conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        return await first, await second

    assert asyncio.run(main()) == (Response(404, b"no", 0), Response(200, b"", 0))


def test_garbage_and_closed_connections_fail_the_request():
    async def main():
        conn, transport = connected()
        fut = conn.request(b"x")
        conn.data_received(b"nonsense\r\n\r\n")
        with pytest.raises(ProtocolError):
            await fut
        assert transport.aborted and not conn.alive
        conn, _ = connected()
        fut = conn.request(b"x")
        conn.connection_lost(None)
        with pytest.raises(ConnectionError):
            await fut

    asyncio.run(main())


def test_timeout_aborts_the_connection():
    async def main():
        conn, transport = connected()
        with pytest.raises(TimeoutError):
            await conn.request(b"x", timeout_s=0.01)
        return transport

    assert asyncio.run(main()).aborted


def test_binary_protocol_round_trip():
    tensor = np.arange(6, dtype=np.float32).reshape(1, 6)
    body, head = infer_body([("INPUT", "FP32", tensor)], {"priority": 2})
    assert body[head:] == tensor.tobytes() and b'"priority":2' in body[:head]
    request = http_request("h:1", "m", body, head)
    assert request.startswith(b"POST /v2/models/m/infer HTTP/1.1\r\n")
    assert f"Inference-Header-Content-Length: {head}\r\n".encode() in request
    header = b'{"outputs":[{"name":"OUTPUT","datatype":"FP32","shape":[1,6],"parameters":{"binary_data_size":24}}]}'
    out = decode_outputs(Response(200, header + tensor.tobytes(), len(header)))
    assert np.array_equal(out["OUTPUT"], tensor)
    json_only = b'{"outputs":[{"name":"O","datatype":"INT32","shape":[1,1],"data":[7]}]}'
    assert decode_outputs(Response(200, json_only))["O"].tolist() == [[7]]


@pytest.mark.parametrize(
    "status, body, expected",
    [
        (200, b"", (Outcome.OK, "")),
        (503, b'{"error":"Request timeout expired"}', (Outcome.REJECTED, "queue_timeout")),
        (503, b'{"error":"[request id: <id_unknown>] Exceeds maximum queue size"}', (Outcome.REJECTED, "queue_full")),
        (400, b'{"error":"bad input"}', (Outcome.ERROR, "http_400")),
        (500, b"not json", (Outcome.ERROR, "http_500")),
    ],
)
def test_classify_answers(status, body, expected):
    assert classify(Response(status, body)) == expected


def test_classify_failures_without_answer():
    assert classify_exception(TimeoutError()) == (Outcome.TIMEOUT, "client_timeout")
    assert classify_exception(ConnectionResetError()) == (Outcome.ERROR, "connection")
