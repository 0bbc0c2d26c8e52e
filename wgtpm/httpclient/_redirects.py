"""Which redirects the client follows, and what goes with them.

A caller's headers reach only the origin they were meant for
(:func:`forwarded`); a redirect must name an ``http`` or ``https`` URL
(:func:`redirect_target`), and one from a public address to a loopback,
link-local or private one is refused (:func:`internal` tells them apart).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

from ._credentials import origin, shown_target
from ._errors import RedirectError

__all__ = ["REDIRECTS", "SAFE_HEADERS", "forwarded", "internal", "redirect_target"]

#: Headers that may follow a redirect to another origin; all others are dropped.
SAFE_HEADERS = frozenset({"accept", "accept-encoding", "range", "user-agent"})
#: The statuses of a redirect that the client follows (with a ``Location``).
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def forwarded(headers: Mapping[str, str], start: str, url: str) -> dict[str, str]:
    """The headers of a request begun at ``start`` that go to ``url``, where redirects
    led it: every one to ``start``'s origin, only :data:`SAFE_HEADERS` to another."""
    if origin(url) == origin(start):
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() in SAFE_HEADERS}


def internal(host: str) -> bool:
    """Whether ``host`` names this machine or a private network (by its literal address)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


def redirect_target(start: str, cur: str, location: str) -> str:
    """The absolute URL a redirect from ``cur`` to ``location`` names, if wgtpm may follow it:
    ``http`` or ``https`` with a host (and a valid port). Anything else (``file://``,
    ``ftp://``, ``javascript:``, a malformed URL) is a :class:`RedirectError` for the
    request begun at ``start``; no request is made to it."""
    try:
        nxt = urljoin(cur, location)
        u = urlsplit(nxt)
        u.port  # noqa: B018  # raises ValueError for a port out of range or not a number
    except ValueError:
        raise RedirectError(
            start, location, f"refused a redirect to {shown_target(location)}: not a valid URL"
        ) from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise RedirectError(
            start,
            nxt,
            f"refused a redirect to {shown_target(nxt)}: wgtpm follows redirects only to "
            "http and https URLs",
        )
    return nxt
