"""A rate trace from Prometheus: the range query asked, the answer read, each refusal in words (a fake HTTP client)."""
from __future__ import annotations

import pytest

from loadgen.rate_trace.prometheus_range import fetch_rate_trace, promql_range_query
from loadgen.rate_trace.rate_trace import TraceError
from tests.unit.loadgen.rate_trace.prometheus_example import PROMETHEUS_EXAMPLE


def refused(call, *args, **kwargs) -> str:
    """Return the TraceError message of a call that must be refused."""
    with pytest.raises(TraceError) as info:
        call(*args, **kwargs)
    return str(info.value)


# --- Prometheus -------------------------------------------------------------------------------------------------

class FakeResponse:
    def __init__(self, body, status_code: int = 200):
        self.body, self.status_code = body, status_code

    def json(self):
        if isinstance(self.body, Exception):
            raise self.body
        return self.body


class FakeClient:
    """Records each get and answers with a fixed response (or raises)."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def get(self, url, params=None, timeout=None):
        self.calls.append((url, params, timeout))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_range_query_builds_prometheus_parameters():
    path, params = promql_range_query(" rate(x[1m]) ", "2015-07-01T20:10:30.781Z", 1435781460.781, "15s")
    assert path == "/api/v1/query_range"
    assert params == {"query": "rate(x[1m])", "start": "1435781430.781", "end": "1435781460.781", "step": "15"}
    assert promql_range_query("up", 0, 86_400, "1h30m")[1]["step"] == "5400"


@pytest.mark.parametrize("args, words", [
    (("", 0, 60, 15), "query is empty"),
    (("up", 60, 0, 15), "must come after start"),
    (("up", 0, 8 * 86_400, 3600), "at most 7 days"),
    (("up", 0, 86_400, 1), "use a step of at least 8 s"),
    (("up", 0, 60, "fast"), "duration like 15s"),
    (("up", 0, 60, 0), "positive"),
])
def test_range_query_refusals_say_the_fix(args, words):
    message = refused(promql_range_query, *args)
    assert words in message, message


def test_fetch_asks_the_range_query_and_reads_the_answer():
    client = FakeClient(FakeResponse(PROMETHEUS_EXAMPLE))
    trace = fetch_rate_trace("http://prom:9090/", "up", 1435781430.781, 1435781460.781, 15, client, timeout_s=7)
    url, params, timeout = client.calls[0]
    assert (url, params["query"], params["step"], timeout) == ("http://prom:9090/api/v1/query_range", "up", "15", 7)
    assert trace.rates == (1.0, 1.0, 2.0) and "prom:9090" in trace.source, trace


@pytest.mark.parametrize("base_url, answer, words", [
    ("ftp://prom:9090", None, "http:// or https://"),
    ("prom:9090", None, "http:// or https://"),
    ("http://prom:9090", ConnectionError("refused"), "did not answer: refused"),
    ("http://prom:9090", FakeResponse(ValueError("no json"), 502), "HTTP 502 without JSON"),
    ("http://prom:9090", FakeResponse({"status": "error", "errorType": "execution", "error": "timeout"}, 503),
     "Prometheus refused the query (execution): timeout"),
])
def test_fetch_refusals_say_why(base_url, answer, words):
    client = FakeClient(answer)
    message = refused(fetch_rate_trace, base_url, "up", 0, 60, 15, client)
    assert words in message, message
    assert not client.calls or answer is not None  # a bad URL is refused before any request
