"""The gate's rules, with no Streamlit: allowed hosts, token strength, TLS warnings, who may operate."""
from __future__ import annotations

import pytest

from app.access.gate import (Request, allowed_hosts, decide, host_allowed, host_name, is_loopback, local,
                             needs_tls_warning, parse_hosts, token_problem)

TOKEN = "a-token-of-24-characters"
LOOPBACK = allowed_hosts("127.0.0.1")


@pytest.mark.parametrize("header, name", [
    ("127.0.0.1:8501", "127.0.0.1"), ("localhost", "localhost"), ("[::1]:8501", "::1"),
    ("LAB.Example.COM.", "lab.example.com"), ("lab.example.com:99999", None), ("user@lab.example.com", None),
    ("lab.example.com/x", None), ("", None), ("[::1", None),
])
def test_host_name_of_a_host_header(header, name):
    assert host_name(header) == name


def test_the_default_hosts_are_loopback_and_the_bound_address():
    assert LOOPBACK == ("localhost", "127.0.0.1", "::1")
    assert allowed_hosts("0.0.0.0") == LOOPBACK and allowed_hosts("::") == LOOPBACK  # every interface: no name
    assert allowed_hosts("192.0.2.7") == (*LOOPBACK, "192.0.2.7")
    assert allowed_hosts("127.0.0.1", parse_hosts(" Lab.Example.com:443, ,[fd00::2],*.corp.example ")) == (
        *LOOPBACK, "lab.example.com", "fd00::2", "*.corp.example")


@pytest.mark.parametrize("header, allowed", [
    ("127.0.0.1:8501", True), ("localhost:8501", True), ("[::1]:8501", True), ("LOCALHOST", True),
    ("rebind.attacker.example:8501", False), ("localhost.attacker.example", False), ("127.0.0.1.nip.io", False),
    ("192.0.2.7:8501", False), ("lab.example.com", True), ("a.corp.example", True), ("corp.example", False),
    ("evilcorp.example", False), ("127.0.0.1@attacker.example", False), ("", False), (None, False),
])
def test_only_allowed_names_pass(header, allowed):
    names = allowed_hosts("127.0.0.1", ("lab.example.com", "*.corp.example"))
    assert host_allowed(header, names) is allowed


def test_a_wildcard_allows_any_well_formed_host():
    assert host_allowed("anything.example:1", ("*",)) and not host_allowed("a/b", ("*",))


def test_loopback_names():
    assert all(is_loopback(n) for n in ("localhost", "127.0.0.1", "127.5.0.1", "::1", "[::1]", "LOCALHOST."))
    assert not any(is_loopback(n) for n in ("0.0.0.0", "::", "192.0.2.7", "localhost.example", "", None))


def test_tokens_shorter_than_16_characters_are_refused():
    assert token_problem(None) is None and token_problem("x" * 16) is None
    problem = token_problem("s3cret")
    assert problem and "6 characters" in problem and "at least 16" in problem and "secrets.token_urlsafe" in problem
    assert token_problem("x" * 15)


@pytest.mark.parametrize("request_, warn", [
    (Request("127.0.0.1", "127.0.0.1:8501"), False),
    (Request("0.0.0.0", "localhost:8501", client="172.17.0.1"), False),  # a browser on this machine (Compose)
    (Request("0.0.0.0", "192.0.2.7:8501", client="192.0.2.9"), True),
    (Request("127.0.0.1", "lab.example.com"), True),  # a plain-HTTP proxy
    (Request("0.0.0.0", "192.0.2.7:8501", client="192.0.2.9", tls=True), False),
    (Request("0.0.0.0", None), False),  # no browser (a script test)
])
def test_the_tls_warning_is_for_plain_http_beyond_loopback(request_, warn):
    assert needs_tls_warning(request_) is warn


def test_local_means_loopback_bind_name_and_client():
    assert local(Request("127.0.0.1", "localhost:8501")) and local(Request("127.0.0.1"))
    assert not local(Request("0.0.0.0", "localhost:8501"))  # bound beyond loopback: anyone could be anywhere
    assert not local(Request("127.0.0.1", "lab.example.com"))  # a reverse proxy's name
    assert not local(Request("127.0.0.1", "127.0.0.1:8501", client="198.51.100.4"))  # a forwarded client


def rules(request: Request, token: str | None = TOKEN, unlocked: bool = False, viewer: bool = False):
    return decide(request, allowed_hosts(request.bind, ("lab.example.com",)), viewer, token, unlocked)


def test_who_may_operate():
    assert rules(Request("127.0.0.1", "127.0.0.1:8501"), token=None).operate
    assert not rules(Request("127.0.0.1", "127.0.0.1:8501"), unlocked=True, viewer=True).operate  # viewer wins
    foreign = rules(Request("127.0.0.1", "rebind.attacker.example:8501"), token=None)
    assert not foreign.operate and "`rebind.attacker.example:8501`" in foreign.reason, foreign
    assert "TBL_ALLOWED_HOSTS" in foreign.reason
    assert not rules(Request("127.0.0.1", "rebind.attacker.example"), unlocked=True).operate  # even with the flag
    beyond = Request("192.0.2.7", "192.0.2.7:8501", client="192.0.2.9")
    assert not rules(beyond, token=None).operate and "read-only for everyone" in rules(beyond, token=None).reason
    asked = rules(beyond)
    assert not asked.operate and asked.ask and "served on 192.0.2.7" in asked.reason
    assert not rules(Request("0.0.0.0", "rebind.attacker.example")).ask  # a foreign host is not even asked
    assert rules(beyond, unlocked=True).operate
    proxied = rules(Request("127.0.0.1", "lab.example.com"))
    assert proxied.ask and "reached as `lab.example.com`" in proxied.reason


def test_what_the_client_sent_is_shown_inert():
    verdict = rules(Request("127.0.0.1", "[x](http://a.example)<img src=x>"))
    assert "`[x]?http:??a.example??img?src?x?`" in verdict.reason, verdict  # in a code span, no link, no tag
    assert "`198.51.100.4?evil`" in rules(Request("127.0.0.1", "localhost", client="198.51.100.4 evil")).reason


def test_a_short_token_makes_the_dashboard_read_only_for_everyone():
    for request in (Request("127.0.0.1", "localhost"), Request("192.0.2.7", "192.0.2.7", client="192.0.2.9")):
        verdict = rules(request, token="s3cret", unlocked=True)
        assert not verdict.operate and not verdict.ask and "at least 16" in verdict.reason, verdict
