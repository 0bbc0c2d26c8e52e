"""Credentials by origin, and secrets kept out of every message.

A :class:`Credential` yields its header only for a URL of its own origin
(:func:`origin`). Every credential value, and the password of every URL
requested, is registered, and :func:`redact` shows it as ``***``; a URL's user
information is shown as ``***@`` (:func:`redact_url`), and progress lines show a
URL without its query (:func:`shown_url`).
"""

from __future__ import annotations

import netrc
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "MAX_SHOWN_URL",
    "MIN_SECRET",
    "Credential",
    "netrc_authorization",
    "netrc_login",
    "origin",
    "printable",
    "redact",
    "redact_url",
    "register_secret",
    "register_userinfo",
    "shown_target",
    "shown_url",
]

#: The most characters of a redirect's target (the server's text) that a message shows.
MAX_SHOWN_URL = 200


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with default ports filled in."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return u.scheme, (u.hostname or "").lower(), port


def redact_url(url: str) -> str:
    """``url`` with any user information (``user:pass@``, ``TOKEN@``) shown as ``***@``;
    also in what a user typed without a scheme (``user:pass@reg.example/x``)."""
    try:
        u = urlsplit(url)
    except ValueError:
        return url.split("://", 1)[0] + "://***" if "@" in url else url
    if not u.netloc and "://" not in url:
        head, sep, tail = url.partition("/")
        return "***@" + head.rsplit("@", 1)[1] + sep + tail if "@" in head else url
    if "@" not in u.netloc:
        return url
    host = u.netloc.rsplit("@", 1)[1]
    return urlunsplit((u.scheme, "***@" + host, u.path, u.query, u.fragment))


def shown_url(url: str) -> str:
    """``url`` as progress lines show it: scheme, host and path; no query (signed URLs
    carry tokens there) and no user information."""
    try:
        u = urlsplit(url)
    except ValueError:
        return redact_url(url)
    host = u.netloc.rsplit("@", 1)[-1]
    return redact(urlunsplit((u.scheme, host, u.path, "", "")))


#: What :func:`redact` hides: every credential value and URL password registered so far.
_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()


def shown_target(url: str) -> str:
    """A redirect's target as a message shows it: user information hidden, printable, at most
    :data:`MAX_SHOWN_URL` characters (it is the server's text)."""
    shown = printable(redact_url(url))
    return shown if len(shown) <= MAX_SHOWN_URL else shown[: MAX_SHOWN_URL - 3] + "..."


def printable(text: str) -> str:
    """``text`` with control and other non-printable characters shown as ``?``."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


#: The user information of a URL inside free text: ``scheme://`` then anything up to the
#: last ``@`` before the host's end (``/``, ``?``, ``#`` or a space), as :func:`redact_url` cuts it.
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")
#: Registered secrets shorter than this are left alone: they would hide common words.
MIN_SECRET = 6


def redact(text: str) -> str:
    """``text`` with every registered secret (credential values) shown as ``***``, and the
    user information of every URL in it as ``***@`` (as :func:`redact_url` shows one URL).

    What every message that may hold a URL or a server's words goes through:
    ``http://user:pw@reg.example/x: HTTP 401`` -> ``http://***@reg.example/x: HTTP 401``.
    """
    with _SECRETS_LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, "***")
    return _USERINFO.sub(r"\1***@", text)


def register_secret(*secrets: str) -> None:
    """Have :func:`redact` hide each of ``secrets`` (those of :data:`MIN_SECRET` characters or more)."""
    with _SECRETS_LOCK:
        _SECRETS.update(s for s in secrets if len(s) >= MIN_SECRET)


def register_userinfo(url: str) -> None:
    """Have :func:`redact` hide the password of ``url``'s user information (``user:PASSWORD@``),
    as written and percent-decoded, wherever it appears, not only inside the URL."""
    if "@" not in url:
        return
    try:
        password = urlsplit(url).password
    except ValueError:
        return
    if password:
        register_secret(password, unquote(password))


@dataclass(frozen=True)
class Credential:
    """A secret header for one origin: ``GITHUB_TOKEN`` for the GitHub API, say.

    :meth:`headers_for` gives the header only for a URL whose origin is that
    of ``url``, so a token never goes where a (possibly hostile) API points;
    the client drops it again on a redirect to another origin. Creating one
    registers ``value`` with :func:`redact`.
    """

    url: str
    header: str
    value: str = field(repr=False)

    def __post_init__(self) -> None:
        # the whole value and its token alone ("Bearer T" -> "T"); short strings are common words
        register_secret(self.value, self.value.rsplit(" ", 1)[-1])

    def headers_for(self, url: str) -> dict[str, str]:
        """``{header: value}`` when ``url`` has this credential's origin, else ``{}``."""
        return {self.header: self.value} if origin(url) == origin(self.url) else {}


def netrc_login(*hosts: str, environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """``(login, password)`` of the first of ``hosts`` that ``~/.netrc`` (``NETRC`` names
    another file) has a ``machine`` for; ``None`` when none or the file is unreadable. The
    password is registered with :func:`redact`."""
    env = os.environ if environ is None else environ
    path = env.get("NETRC") or os.path.expanduser("~/.netrc")
    if not os.path.isfile(path):
        return None
    try:
        rc = netrc.netrc(path)
    except (netrc.NetrcParseError, OSError):
        return None
    for host in hosts:
        found = rc.authenticators(host)
        if found:
            login, _, password = found
            register_secret(password or "")
            return login, password or ""
    return None


def netrc_authorization(url: str) -> str | None:
    found = netrc_login(urlsplit(url).hostname or "")
    if found is None:
        return None
    import base64

    login, password = found
    value = "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()
    register_secret(value, value.rsplit(" ", 1)[-1])
    return value
