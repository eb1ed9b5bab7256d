"""Who may operate the dashboard: the allowed host names, the token's strength, TLS, and the rules that decide."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlparse

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
ANY_ADDRESS = ("", "0.0.0.0", "::")  # a bind to every interface names no host a browser would use
MIN_TOKEN_CHARS = 16
TOKEN_ENV = "TBL_OPERATOR_TOKEN"
HOSTS_ENV = "TBL_ALLOWED_HOSTS"
MAKE_TOKEN = "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"


@dataclass(frozen=True)
class Access:
    """What this browser session may do, and why; ask: typing the operator token would unlock it."""

    operate: bool
    reason: str
    ask: bool = False


@dataclass(frozen=True)
class Request:
    """Who asks: the address the dashboard is bound to, the Host the browser named (None: no browser, as in a
    script test), the client's address (None: loopback) and whether the browser's connection uses TLS."""

    bind: str
    host: str | None = None
    client: str | None = None
    tls: bool = False


def host_name(header: str) -> str | None:
    """Return the host name of a Host header ("[::1]:8501" -> "::1"), lower-case; None when it is malformed."""
    try:
        parsed = urlparse(f"//{header.strip()}")
        _ = parsed.port  # a port that is not a number in range raises
    except ValueError:
        return None
    if not parsed.hostname or parsed.username or parsed.password or parsed.path or parsed.query or parsed.fragment:
        return None
    return parsed.hostname.lower().rstrip(".")


def is_loopback(name: str | None) -> bool:
    """Return True for a loopback host name or address (localhost, 127.0.0.0/8, ::1)."""
    if not name:
        return False
    name = name.strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_hosts(text: str | None) -> tuple[str, ...]:
    """Return the names of a comma list (TBL_ALLOWED_HOSTS), lower-case, without ports or brackets."""
    names = []
    for item in (text or "").split(","):
        item = item.strip()
        if item in ("*",) or item.startswith("*."):
            names.append(item.lower())
        elif item:
            names.append(host_name(item) or item.lower())
    return tuple(names)


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Return the names a browser may use to operate: loopback, the bound address, and the extra names."""
    names = list(LOOPBACK_NAMES)
    for name in (bind.strip("[]").lower(), *extra):
        if name not in ANY_ADDRESS and name not in names:
            names.append(name)
    return tuple(names)


def host_allowed(header: str | None, allowed: Iterable[str]) -> bool:
    """Return True when a Host header names an allowed host (patterns: "*" any, "*.example.com" subdomains)."""
    name = host_name(header) if header is not None else None
    if name is None:
        return False
    for pattern in allowed:
        if pattern == "*" or name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:])):
            return True
    return False


def token_problem(token: str | None) -> str | None:
    """Return why a configured operator token is refused (too short), or None when it is usable or unset."""
    if token is None or len(token) >= MIN_TOKEN_CHARS:
        return None
    return (f"{TOKEN_ENV} has {len(token)} characters and a token needs at least {MIN_TOKEN_CHARS}: read-only for "
            f"everyone until the dashboard is restarted with a longer one (make one with `{MAKE_TOKEN}`)")


def needs_tls_warning(request: Request) -> bool:
    """Return True when the browser reached the dashboard beyond loopback without TLS: a typed token travels in
    clear."""
    return not request.tls and request.host is not None and not is_loopback(host_name(request.host))


def local(request: Request) -> bool:
    """Return True for a browser on this machine talking to a loopback-bound dashboard by a loopback name (a
    reverse proxy's name, or a forwarded client address, is not local)."""
    host_ok = request.host is None or is_loopback(host_name(request.host))
    return is_loopback(request.bind) and host_ok and (request.client is None or is_loopback(request.client))


def where(request: Request) -> str:
    """Return how the session reaches the dashboard, in words."""
    if not is_loopback(request.bind):
        return f"served on {request.bind or 'every interface'}"
    if request.host is not None and not is_loopback(host_name(request.host)):
        return f"reached as `{safe_shown(request.host)}`"
    return f"reached from `{safe_shown(request.client or '')}`"


def safe_shown(text: str) -> str:
    """Return a Host header or an address safe to show in Markdown and logs (they come from the client)."""
    return re.sub(r"[^A-Za-z0-9.:_\[\]-]", "?", text)[:100]


def decide(request: Request, allowed: Iterable[str], viewer: bool, token: str | None, unlocked: bool) -> Access:
    """Return a session's access: viewer mode and a foreign Host refuse; local sessions operate; the rest need the
    operator token, exchanged once for this session (unlocked)."""
    if viewer:
        return Access(False, "viewer mode (TBL_VIEWER): configuration and traffic controls are hidden")
    if request.host is not None and not host_allowed(request.host, allowed):
        return Access(False, f"this page was opened as `{safe_shown(request.host)}`, which is not an allowed host name of "
                             f"this dashboard (add it to {HOSTS_ENV} and server.allowedHosts)")
    problem = token_problem(token)
    if problem:
        return Access(False, problem)
    if local(request):
        return Access(True, "bound to 127.0.0.1: anyone on this machine may operate")
    if not token:
        return Access(False, f"{where(request)} without {TOKEN_ENV}: read-only for everyone "
                             f"(restart with {TOKEN_ENV} set to operate)")
    if unlocked:
        return Access(True, f"{where(request)}: operator token accepted for this session")
    return Access(False, f"{where(request)}: enter the operator token in the sidebar to operate", ask=True)
