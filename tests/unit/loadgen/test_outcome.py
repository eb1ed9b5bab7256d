"""Outcomes: each answer or failure classified, and the server's words kept on the record, cut short."""
from __future__ import annotations

import json

import pytest

from loadgen.connection import Response
from loadgen.outcome import DETAIL_CHARS, Outcome, classify, classify_exception, exception_detail, response_detail

SHAPE = "unexpected shape for input 'INPUT' for model 'm'. Expected [-1,4], got [4]."


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


def test_the_servers_text_is_kept_without_its_request_id_and_cut_short():
    long = "[request id: <id_unknown>] " + SHAPE + " NOTE: " + "x" * 600
    detail = response_detail(Response(400, json.dumps({"error": long}).encode()))
    assert detail.startswith(SHAPE) and len(detail) == DETAIL_CHARS and detail.endswith("…"), detail
    assert response_detail(Response(502, b"")) == "HTTP 502 with an empty body"
    assert exception_detail(TimeoutError()) == "no response in time (the client's timeout)"
    assert exception_detail(ConnectionError("connection closed by the server")) == "connection closed by the server"
