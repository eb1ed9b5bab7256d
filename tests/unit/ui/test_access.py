"""The operator-token gate on a page (app/ui/access.py over the rules of app/access): beyond loopback only the token
unlocks the controls, typed once, guessed slowly, never kept; a foreign Host and a short token leave the page
read-only; plain HTTP is warned about. A fake clock and a made-up request; the FakeLab behind the page."""
from __future__ import annotations

import pytest

from app.access.gate import Request
from app.access.guess_limit import TokenExchange
from tests.helpers import Clock
from tests.unit.ui.apptest import labels, open_page, texts

TOKEN = "gate-test-token-0123456789"  # 26 characters
BEYOND = Request("192.0.2.7", "192.0.2.7:8501", client="192.0.2.9")  # a browser on another machine
REBIND = "rebind.attacker.example"
PAGE = "lab_pages/dynamic_batching.py"
LIGHT = "lab_pages/three_batchings.py"  # the gate is every page's (lab_or_stop); the tries on one drawn quickly


@pytest.fixture
def gate(on_fake, monkeypatch):
    """A fresh token exchange on a fake clock, a browser beyond loopback, and the operator token set."""
    import app.ui.access as access  # noqa: PLC0415

    clock = Clock()
    monkeypatch.setattr(access, "EXCHANGE", TokenExchange(clock))
    monkeypatch.setattr(access, "request", lambda: BEYOND)
    monkeypatch.setattr(access, "_said", set())
    monkeypatch.setenv("TBL_OPERATOR_TOKEN", TOKEN)
    return clock


def token_field(at):
    found = [t for t in at.sidebar.text_input if t.label == "Operator token"]
    return found[0] if found else None


def sidebar_errors(at) -> list[str]:
    return [e.value for e in at.sidebar.error]


def test_beyond_loopback_the_token_unlocks_once_and_is_not_kept(gate, caplog):
    import app.ui.access as access  # noqa: PLC0415

    at = open_page(PAGE)
    assert "Apply" not in labels(at.button)
    assert any("enter the operator token" in i for i in texts(at.info)), texts(at.info)
    token_field(at).set_value("a-wrong-guess").run()
    assert "Apply" not in labels(at.button)
    assert any("Refused: wrong operator token" in e for e in sidebar_errors(at)), sidebar_errors(at)
    at.run()  # a later rerun of the page (a click elsewhere) still says it
    assert any("Refused: wrong operator token" in e for e in sidebar_errors(at)), sidebar_errors(at)
    refusals = [r.getMessage() for r in caplog.records if "refused operator token" in r.getMessage()]
    assert refusals and "from 192.0.2.9" in refusals[-1] and "a-wrong-guess" not in refusals[-1], refusals
    gate.now += 1.5  # past the wait after one wrong token
    assert token_field(at).value == "", "the field keeps the typed token"
    token_field(at).set_value(TOKEN).run()
    assert {"Apply", "Start traffic"} <= set(labels(at.button)), labels(at.button)
    assert token_field(at) is None  # typed once
    state = at.session_state.to_dict()
    assert state[access.UNLOCKED_KEY] is True and TOKEN not in repr(state), state


def unlocked(at) -> bool:
    import app.ui.access as access  # noqa: PLC0415

    return bool(at.session_state[access.UNLOCKED_KEY]) if access.UNLOCKED_KEY in at.session_state else False


def test_ten_wrong_tokens_lock_the_gate_even_for_the_right_one(gate, caplog):
    at = open_page(LIGHT)
    for n in range(10):
        token_field(at).set_value(f"wrong-guess-{n}").run()
        assert token_field(at).value == "", "the field keeps what was typed"
        gate.now += 61  # past every wait: each of the ten is compared
    assert any("locked: 10 wrong tokens within 10 min" in e for e in sidebar_errors(at)), sidebar_errors(at)
    token_field(at).set_value(TOKEN).run()
    assert not unlocked(at) and any("not checked: locked" in e for e in sidebar_errors(at)), sidebar_errors(at)
    assert sum("refused operator token from 192.0.2.9" in r.getMessage() for r in caplog.records) == 11
    gate.now += 600
    token_field(at).set_value(TOKEN).run()
    assert unlocked(at) and token_field(at) is None


def test_a_token_the_browser_sends_again_is_not_a_new_try(gate, caplog):
    # A browser that has not drawn the emptied field yet sends the typed text again with its next rerun (a live
    # fragment's): one wrong token must count once, however often it comes back.
    at = open_page(LIGHT)
    for _ in range(3):
        token_field(at).set_value("wrong-guess").run()
        gate.now += 61  # past every wait: a resend would be compared again
    assert sidebar_errors(at) == ["Refused: wrong operator token; 1 wrong token lately: wait 1 s before the next try."]
    assert sum("refused operator token" in r.getMessage() for r in caplog.records) == 1
    token_field(at).set_value("another-wrong-guess").run()  # a new text is a new try: the second wrong token
    assert sidebar_errors(at) == ["Refused: wrong operator token; 2 wrong tokens lately: wait 2 s before the next try."]
    kept = repr(dict(at.session_state))
    assert "wrong-guess" not in kept, kept  # a keyed digest of the text compared, not the text


def test_a_token_sent_within_the_wait_is_not_compared_and_counts_after_it(gate):
    at = open_page(LIGHT)
    token_field(at).set_value("wrong-guess").run()
    gate.now += 0.5  # the wait after one wrong token is 1 s
    token_field(at).set_value(TOKEN).run()
    assert not unlocked(at)
    assert any("wait 1 s before the next try" in e for e in sidebar_errors(at)), sidebar_errors(at)
    gate.now += 2
    token_field(at).set_value(TOKEN).run()  # held back, so not remembered as compared: compared now
    assert unlocked(at)


def test_a_foreign_host_gets_the_read_only_view_and_no_field(gate, monkeypatch):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setattr(access, "request", lambda: Request("127.0.0.1", f"{REBIND}:8501"))
    at = open_page(PAGE)
    assert "Apply" not in labels(at.button) and token_field(at) is None
    assert any(f"opened as `{REBIND}:8501`, which is not an allowed host" in i for i in texts(at.info)), texts(at.info)


def test_a_short_token_leaves_the_dashboard_read_only_for_everyone(gate, monkeypatch, caplog):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setenv("TBL_OPERATOR_TOKEN", "s3cret")
    monkeypatch.setattr(access, "request", lambda: Request("127.0.0.1", "127.0.0.1:8501"))  # even on loopback
    at = open_page(PAGE)
    assert "Apply" not in labels(at.button) and token_field(at) is None
    infos = texts(at.info)
    assert any("TBL_OPERATOR_TOKEN has 6 characters" in i and "secrets.token_urlsafe" in i for i in infos), infos
    assert any("at least 16" in r.getMessage() for r in caplog.records)


def test_no_token_beyond_loopback_is_read_only_for_everyone(gate, monkeypatch):
    monkeypatch.delenv("TBL_OPERATOR_TOKEN")
    at = open_page(PAGE)
    assert "Apply" not in labels(at.button) and token_field(at) is None
    assert any("read-only for everyone" in i for i in texts(at.info)), texts(at.info)


@pytest.mark.parametrize("tls", [False, True])
def test_plain_http_beyond_loopback_is_warned_about(gate, monkeypatch, tls):
    import app.ui.access as access  # noqa: PLC0415

    monkeypatch.setattr(access, "request", lambda: Request(BEYOND.bind, BEYOND.host, BEYOND.client, tls=tls))
    at = open_page(PAGE)
    warned = any("Plain HTTP beyond loopback" in w.value for w in at.sidebar.warning)
    assert warned is not tls, [w.value for w in at.sidebar.warning]
