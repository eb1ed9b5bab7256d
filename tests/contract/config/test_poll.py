"""Apply in poll mode: write config.pbtxt, wait until the hand-started server serves it; what a bad config does."""
from __future__ import annotations

import json
import time
import urllib.request

import pytest

from app.config.model_config import format_config, read_config, write_text_atomic
from app.config.poll import PollRejectedError, PollTimeoutError, served_timeout_s, wait_until_served
from tests.helpers import wait_until

MODEL = "var_dims"


def _delay(config) -> int:
    return config.dynamic_batching.max_queue_delay_microseconds


def _infer(endpoint) -> list[float]:
    body = json.dumps({"inputs": [{"name": "VALUES", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]})
    request = urllib.request.Request(f"{endpoint.http_url}/v2/models/{MODEL}/infer", data=body.encode())
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["outputs"][0]["data"]


@pytest.fixture
def var_dims(poll_server):
    """The poll server's var_dims config.pbtxt; written back after the test and served again."""
    path = poll_server.repo / MODEL / "config.pbtxt"
    original = path.read_text()
    yield path
    if path.read_text() != original:
        write_text_atomic(path, original)
    wait_until_served(poll_server.endpoint, MODEL, lambda c: _delay(c) == _delay(read_config(path)), 60)


def test_a_written_change_serves_whenever_in_the_poll_cycle_it_lands(poll_server, var_dims):
    """Two writes at different points of the 1 s poll cycle: each is served, and the model answers after."""
    for run in range(2):
        config = read_config(var_dims)
        want = 1000 + 10 * run + _delay(config) % 7
        config.dynamic_batching.max_queue_delay_microseconds = want
        write_text_atomic(var_dims, format_config(config))
        served = wait_until_served(poll_server.endpoint, MODEL, lambda c, w=want: _delay(c) == w, served_timeout_s(1.0))
        assert _delay(served) == want
        time.sleep(0.3 * (run + 1))  # the next write lands elsewhere in the cycle (how soon: bench/config_serve_time)
    assert _infer(poll_server.endpoint) == [6.0]


def test_a_check_that_already_holds_returns_at_once(poll_server):
    clock = iter(range(100)).__next__
    served = wait_until_served(poll_server.endpoint, MODEL, lambda c: c.name == MODEL, 0, clock=clock)
    assert served.name == MODEL and served.max_batch_size == 8


def test_a_config_the_server_cannot_load_keeps_the_old_one_serving_and_the_log_says_why(poll_server, var_dims):
    old = read_config(var_dims)
    bad = read_config(var_dims)
    bad.backend = "no_such_backend"
    bad.dynamic_batching.max_queue_delay_microseconds = _delay(old) + 1
    write_text_atomic(var_dims, format_config(bad))
    with pytest.raises(PollRejectedError) as raised:
        wait_until_served(poll_server.endpoint, MODEL, lambda c: c.backend == "no_such_backend", 30,
                          log=lambda: poll_server.log_path.read_text(errors="replace"))
    error = raised.value
    assert "no_such_backend" in error.reason and "keeps serving the old config" in str(error), str(error)
    state = [m for m in _index(poll_server) if m["name"] == MODEL]
    assert state == [{"name": MODEL, "version": "1", "state": "READY"}], state  # no reason in the index
    assert _served(poll_server).backend == "python" and _infer(poll_server.endpoint) == [6.0]


def test_without_the_log_a_bad_config_is_a_timeout_that_says_where_to_look(poll_server, var_dims):
    text = var_dims.read_text().replace("max_batch_size: 8", "max_batch_size: eight")
    write_text_atomic(var_dims, text)
    with pytest.raises(PollTimeoutError) as raised:
        wait_until_served(poll_server.endpoint, MODEL, lambda c: False, 4)
    message = str(raised.value)
    assert "within 4 s" in message and "READY" in message and "log" in message and "none never" in message, message
    assert _infer(poll_server.endpoint) == [6.0]
    # the server's next poll writes it (a poll every second; a busy machine can push it past the 4 s above)
    wait_until(lambda: f"Poll failed for model directory '{MODEL}'" in poll_server.log_path.read_text(
        errors="replace"), 30, "the server's log to say the poll failed")


def test_with_the_log_a_config_that_does_not_parse_names_line_and_column(poll_server, var_dims):
    write_text_atomic(var_dims, var_dims.read_text().replace("max_batch_size: 8", "max_batch_size: eight"))
    with pytest.raises(PollRejectedError) as raised:
        wait_until_served(poll_server.endpoint, MODEL, lambda c: False, 30,
                          log=lambda: poll_server.log_path.read_text(errors="replace"))
    assert "failed to read text proto" in raised.value.reason and "Expected integer" in raised.value.reason, \
        raised.value.reason


def test_a_model_that_turns_unavailable_raises_with_its_reason(poll_server):
    folder = poll_server.repo / "onnx_plain"  # no config.pbtxt: UNAVAILABLE (the wheel has no onnxruntime backend)
    before = [m for m in _index(poll_server) if m["name"] == "onnx_plain"][0]
    (folder / "config.pbtxt").write_text('backend: "another_missing_backend"\nmax_batch_size: 4\n')
    try:
        with pytest.raises(PollRejectedError) as raised:
            wait_until_served(poll_server.endpoint, "onnx_plain", lambda c: True, 30)
        assert "another_missing_backend" in raised.value.reason, (before, raised.value.reason)
        assert "UNAVAILABLE" in str(raised.value)
    finally:
        (folder / "config.pbtxt").unlink()
        wait_until(lambda: "onnxruntime" in [m for m in _index(poll_server) if m["name"] == "onnx_plain"][0]
                   .get("reason", ""), 30, "onnx_plain's own reason back")


def test_a_server_in_mode_none_never_reloads(none_server):
    path = none_server.repo / MODEL / "config.pbtxt"
    original = path.read_text()
    config = read_config(path)
    config.dynamic_batching.max_queue_delay_microseconds = 4321
    write_text_atomic(path, format_config(config))
    try:
        with pytest.raises(PollTimeoutError) as raised:
            wait_until_served(none_server.endpoint, MODEL, lambda c: _delay(c) == 4321, 3)
    finally:
        write_text_atomic(path, original)
    assert "none never reloads" in str(raised.value) and _delay(raised.value.last.config) != 4321


def _index(server) -> list[dict]:
    request = urllib.request.Request(f"{server.endpoint.http_url}/v2/repository/index", data=b"{}")
    with urllib.request.urlopen(request, timeout=5) as reply:
        return json.loads(reply.read())


def _served(server):
    from app.config.model_config import from_json  # noqa: PLC0415

    with urllib.request.urlopen(f"{server.endpoint.http_url}/v2/models/{MODEL}/config", timeout=5) as reply:
        return from_json(json.loads(reply.read()))
