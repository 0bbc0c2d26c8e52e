"""HTTP for sources and downloads: retries, safe redirects, credentials by origin.

Every network request of wgtpm goes through :class:`HttpClient`:

- GETs are retried with exponential backoff and full jitter on connection
  errors, 5xx and 429 (a ``Retry-After`` is honoured up to
  ``HttpOptions.max_retry_after``; a longer wait is an error that says so).
- Writes (:meth:`HttpClient.send`, for publishing) are retried only when
  idempotent (PUT, DELETE, or as the caller says), follow no redirect, and
  answer any status for the caller to judge.
- Redirects are followed here, not by httpx, so that the caller's headers
  (``Authorization``, ``X-API-Key``, cookies, anything not on the safe list)
  reach the origin they were meant for and never another one: GitHub and
  Hugging Face redirect downloads to storage hosts. A redirect from a public
  address to a loopback, link-local or private one is refused
  (:class:`RedirectRefusedError`); so is one to anything but an ``http`` or
  ``https`` URL (``file://``), and more than ``HttpOptions.max_redirects`` in
  a row is a loop (:class:`RedirectError`). These are final: never retried,
  one line naming the URL and what the redirect did.
- Credentials go to their own origin only: a :class:`Credential` (a token
  of ``GITHUB_TOKEN``, ``HF_TOKEN``, ``PAW_API_KEY``) yields its header
  only for a URL of its origin (scheme, host, port), whatever URL an API
  names (an asset ``url``, a ``Link: rel="next"``). A host without an
  ``Authorization`` header gets credentials from ``~/.netrc`` (or
  ``$NETRC``), for private registries.
- Secrets never reach a message: every credential value (and the password of
  a URL requested, ``https://user:PASSWORD@reg.example``) is registered, and
  :func:`redact` (applied to every error this module raises, and by the
  publish targets to theirs) shows it as ``***``; a URL's user information
  is shown as ``***@`` too (:func:`redact_url` for one URL), and of a
  server's error body only a short, single-line, printable excerpt is shown.

Limits (named, as Go's ``MaxGoMod``):

- a body read whole by :meth:`HttpClient.get` (``@v/list``, ``.info``,
  ``.mod``, ``.index.json``, ``@latest``, every API JSON) may hold at most
  ``limit`` decoded bytes, :data:`MAX_METADATA` unless the caller says
  otherwise. The count runs while the body streams, after content decoding,
  so a huge ``Content-Length``, an endless body or a gzip bomb stops at the
  limit with :class:`ResponseTooLargeError` naming the URL and the limit;
- such a request, its retries included, ends within ``HttpOptions.deadline``
  seconds (:data:`METADATA_DEADLINE`, 30, unless ``WGTPM_HTTP_DEADLINE`` says
  otherwise), so a server trickling a byte a second cannot hang a command:
  :class:`DeadlineExceededError`. The waits between tries are not counted
  (each is at most ``max_retry_after`` and announced). A *file* read whole
  (``get(..., file=True)``) has no deadline: like a download it must keep
  ``HttpOptions.min_rate`` bytes a second over each ``rate_window`` seconds,
  or the try is cut and retried (:data:`FILE_MIN_RATE`);
- of an error response only :data:`MAX_ERROR_BODY` bytes are read.

What the user sees (through :func:`wgtpm._report.network`): a notice naming
the URL (scheme, host and path; never a query or user information) when a
server has sent no answer or no bytes for :attr:`HttpOptions.slow_after`
seconds, one per retry, and with ``wgtpm -x`` one line per request as it ends::

    GET https://huggingface.co/api/models/acme/tiny/revision/main -> 200 (12.3 KiB, 45 ms)

A timeout that ends the command names the host and ``WGTPM_HTTP_TIMEOUT``.
Redirect responses are read to their end (they are small) so that their
connection goes back to the pool: a download of 500 files through an API
that redirects each to a CDN opens a few connections, not 500. Retry waits
end early on Ctrl-C (:mod:`wgtpm._interrupt`).

Errors: :class:`HTTPStatusError` for an unexpected status,
:class:`TransportError` for a network failure, :class:`ResponseTooLargeError`
for a body over its limit; all are :class:`~wgtpm.WgtpmError` and carry the
URL (with any user name or password in it shown as ``***``). Sources
translate them into module errors that name module@version.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import math
import netrc
import os
import re
import socket
import sys
import threading
import time
import types
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from . import _interrupt
from ._errors import UsageError, WgtpmError
from ._report import human_size, network, tracing
from ._retry import Backoff, refused_for_good

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FILE_MIN_RATE",
    "FILE_RATE_WINDOW",
    "MAX_ERROR_BODY",
    "MAX_METADATA",
    "METADATA_DEADLINE",
    "CertificateError",
    "Credential",
    "DeadlineExceededError",
    "HTTPStatusError",
    "HttpClient",
    "HttpOptions",
    "InvalidURLError",
    "RedirectError",
    "RedirectRefusedError",
    "ResponseTooLargeError",
    "TransportError",
    "UnknownHostError",
    "forwarded",
    "origin",
    "redact",
    "redact_url",
    "register_userinfo",
    "shown_url",
]

#: A request body for :meth:`HttpClient.send`: bytes, or a function giving the chunks of a stream.
Body: TypeAlias = bytes | Callable[[], Iterable[bytes]] | None

#: The most decoded bytes of a body read whole (metadata, API JSON), as Go's ``MaxGoMod``.
MAX_METADATA = 16 << 20
#: Seconds a metadata request (a list, ``.info``, ``.mod``, an index, API JSON) may take, its
#: retries included and the waits between them not (``WGTPM_HTTP_DEADLINE`` overrides it).
#: Such a body is kilobytes: 30 s carries a 1 MiB index at 35 KB/s, while a server that
#: trickles a byte a second is given up on in half a minute (it was 300 s, issue 26).
METADATA_DEADLINE = 30.0
#: Bytes a second a file read whole (``get(..., file=True)``) must keep over each
#: :data:`FILE_RATE_WINDOW` seconds, as a download does (``modfetch.FetchOptions.min_rate``):
#: a file may take long when it is large, never because its server trickles.
FILE_MIN_RATE = 1024
FILE_RATE_WINDOW = 30.0
#: The most bytes read of an error response's body (the message shows less).
MAX_ERROR_BODY = 64 << 10

#: Bytes asked of the socket per read while a download's body streams (:meth:`HttpClient.stream`).
#: httpcore asks 64 KiB, which costs a pass through h11 and httpx per 64 KiB; a download
#: of an identity-encoded body reads up to this much at once instead. Bodies read whole
#: (:meth:`HttpClient.get`) keep 64 KiB reads, so one gzip read inflates at most that much
#: before ``limit`` is checked.
DOWNLOAD_READ = 1 << 20

#: The most characters of a redirect's target (the server's text) that a message shows.
MAX_SHOWN_URL = 200

#: Headers that may follow a redirect to another origin; all others are dropped.
SAFE_HEADERS = frozenset({"accept", "accept-encoding", "range", "user-agent"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Methods that :meth:`HttpClient.send` retries unless told otherwise (RFC 9110, 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class HTTPStatusError(WgtpmError):
    """A response with a status the caller did not expect."""

    def __init__(
        self, status: int, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> None:
        self.status = status
        self.url = url
        self.headers = dict(headers)
        self.body = body[:2000]
        detail = self.body.decode("utf-8", "replace").strip().splitlines()
        tail = f": {_printable(detail[0][:200])}" if detail else ""
        super().__init__(redact(f"GET {_redact(url)}: HTTP {status}{tail}"))


#: The resolver's answers that a name does not exist (not "cannot answer now").
_NO_SUCH_NAME = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, n)}


class TransportError(WgtpmError):
    """The request did not complete: refused, reset, timed out, or a broken response."""

    #: Trying again cannot help (a refused redirect, an unknown host, the deadline).
    final = False

    def __init__(self, url: str, message: str, *, method: str = "GET") -> None:
        self.url = url
        self.reason = message
        super().__init__(redact(f"{method} {_redact(url)}: {message}"))


class DeadlineExceededError(TransportError):
    """A metadata request (retries included) that took longer than ``HttpOptions.deadline``."""

    final = True

    def __init__(self, url: str, deadline: float) -> None:
        self.deadline = deadline
        super().__init__(
            url,
            f"no complete answer within {deadline:g}s (the server is too slow; "
            "WGTPM_HTTP_DEADLINE sets the limit)",
        )


class UnknownHostError(TransportError):
    """The host's name does not resolve (the resolver says there is no such name; a
    resolver that cannot answer now is a plain, retried :class:`TransportError`)."""

    final = True


class InvalidURLError(TransportError):
    """A URL that httpx cannot send (a malformed one an API named); trying again cannot help."""

    final = True


class CertificateError(TransportError):
    """The server's TLS certificate is not trusted (expired, for another name, or signed
    by a CA that the bundle in use does not hold, as a proxy that re-signs TLS does)."""

    final = True


class RedirectError(TransportError):
    """A redirect that wgtpm does not follow: more than ``HttpOptions.max_redirects`` in a row
    (a loop), or to a URL that is not ``http``/``https`` with a host (``file:///etc/passwd``).

    Final: the same request would be redirected the same way again, so it is
    not retried (and a download is not resumed). ``target`` is where the last
    redirect pointed.
    """

    final = True

    def __init__(self, url: str, target: str, why: str) -> None:
        self.target = target
        super().__init__(url, why)


class RedirectRefusedError(RedirectError):
    """A redirect from a public address to a loopback, link-local or private one.

    Such a redirect lets a remote server make wgtpm reach the local machine
    or network (a metadata service, an admin port). Where the request began
    at such an address (a private mirror, a test server) it is followed.
    """

    def __init__(self, url: str, target: str) -> None:
        super().__init__(
            url,
            target,
            f"refused a redirect to {_shown_target(target)}: a public server may not send "
            "wgtpm to a loopback, link-local or private address",
        )


class ResponseTooLargeError(WgtpmError):
    """A body read whole that is longer than its limit (decoded bytes, counted while streaming)."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = limit
        super().__init__(
            f"GET {_redact(url)}: the response is larger than the {limit} bytes allowed for it; "
            "the server is misbehaving or this is not the file it should be"
        )


def _env_number(name: str, default: float, low: float, high: float) -> float:
    """``$name`` as a number in [low, high], ``default`` when unset; a bad value is an error."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # also NaN and infinities
        raise UsageError(f"{name}={raw[:40]!r}: want a number from {low:g} to {high:g}")
    return value


def _env_float(name: str, default: float) -> float:
    return _env_number(name, default, 0.001, 86_400.0)


def _env_retries() -> int:
    value = _env_number("WGTPM_HTTP_RETRIES", 4, 0, 100)
    if value != int(value):
        raise UsageError(f"WGTPM_HTTP_RETRIES={value:g}: want a whole number from 0 to 100")
    return int(value)


@dataclass(frozen=True)
class HttpOptions:
    """How patient the client is (``WGTPM_HTTP_RETRIES``, ``WGTPM_HTTP_TIMEOUT`` and
    ``WGTPM_HTTP_DEADLINE`` override)."""

    timeout: float = field(default_factory=lambda: _env_float("WGTPM_HTTP_TIMEOUT", 30.0))
    retries: int = field(default_factory=_env_retries)
    backoff: float = 0.5
    max_retry_after: float = 60.0
    #: Seconds a metadata request may take, retries included (:data:`METADATA_DEADLINE`,
    #: ``WGTPM_HTTP_DEADLINE``).
    deadline: float = field(
        default_factory=lambda: _env_float("WGTPM_HTTP_DEADLINE", METADATA_DEADLINE)
    )
    #: A file read whole keeps ``min_rate`` bytes a second over each ``rate_window`` seconds.
    min_rate: int = FILE_MIN_RATE
    rate_window: float = FILE_RATE_WINDOW
    max_redirects: int = 10
    user_agent: str = "wgtpm/0.1"

    @property
    def slow_after(self) -> float:
        """Seconds without an answer or a byte before the user is told which URL is slow."""
        return min(5.0, self.timeout / 2)

    @property
    def policy(self) -> Backoff:
        """The retry policy these options describe."""
        return Backoff(
            attempts=self.retries + 1, base=self.backoff, max_retry_after=self.max_retry_after
        )


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with default ports filled in."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return u.scheme, (u.hostname or "").lower(), port


def forwarded(headers: Mapping[str, str], start: str, url: str) -> dict[str, str]:
    """The headers of a request begun at ``start`` that go to ``url``, where redirects
    led it: every one to ``start``'s origin, only :data:`SAFE_HEADERS` to another."""
    if origin(url) == origin(start):
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() in SAFE_HEADERS}


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


_redact = redact_url


def shown_url(url: str) -> str:
    """``url`` as progress lines show it: scheme, host and path; no query (signed URLs
    carry tokens there) and no user information."""
    try:
        u = urlsplit(url)
    except ValueError:
        return redact_url(url)
    host = u.netloc.rsplit("@", 1)[-1]
    return redact(urlunsplit((u.scheme, host, u.path, "", "")))


_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()


def _internal(host: str) -> bool:
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


def _shown_target(url: str) -> str:
    """A redirect's target as a message shows it: user information hidden, printable, at most
    :data:`MAX_SHOWN_URL` characters (it is the server's text)."""
    shown = _printable(_redact(url))
    return shown if len(shown) <= MAX_SHOWN_URL else shown[: MAX_SHOWN_URL - 3] + "..."


def _redirect_target(start: str, cur: str, location: str) -> str:
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
            start, location, f"refused a redirect to {_shown_target(location)}: not a valid URL"
        ) from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise RedirectError(
            start,
            nxt,
            f"refused a redirect to {_shown_target(nxt)}: wgtpm follows redirects only to "
            "http and https URLs",
        )
    return nxt


def _printable(text: str) -> str:
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


def _register(*secrets: str) -> None:
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
        _register(password, unquote(password))


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
        _register(self.value, self.value.rsplit(" ", 1)[-1])

    def headers_for(self, url: str) -> dict[str, str]:
        """``{header: value}`` when ``url`` has this credential's origin, else ``{}``."""
        return {self.header: self.value} if origin(url) == origin(self.url) else {}


def _netrc_auth(url: str) -> str | None:
    path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
    if not os.path.isfile(path):
        return None
    try:
        found = netrc.netrc(path).authenticators(urlsplit(url).hostname or "")
    except (netrc.NetrcParseError, OSError):
        return None
    if not found:
        return None
    import base64

    login, _, password = found
    Credential(url, "Authorization", password or "")  # registered for redaction
    return "Basic " + base64.b64encode(f"{login}:{password or ''}".encode()).decode()


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date), if present."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _import_httpx() -> Any:
    """``import httpx`` (and httpcore) without the parts wgtpm never uses.

    The httpx package imports ``httpx._main`` (click, pygments, rich) whenever
    those happen to be installed, which costs about 40 ms a start; wgtpm never
    runs that client, so a stand-in takes its place unless the real one is
    already loaded. httpcore imports ``trio`` when it is installed (selenium
    brings it), about 130 ms, only to support trio's event loop, which wgtpm's
    synchronous client never runs: while httpcore is first imported, ``trio``
    is kept out unless something has imported it already.
    """
    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        stub = types.ModuleType("httpx._main")

        def main() -> None:
            raise SystemExit("the httpx command-line client is not available inside wgtpm")

        stub.main = main  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = stub
    keep_out = "httpcore" not in sys.modules and "trio" not in sys.modules
    if keep_out:
        sys.modules["trio"] = None  # type: ignore[assignment]  # makes `import trio` fail
    try:
        import httpcore  # noqa: F401
        import httpx
    finally:
        if keep_out:
            del sys.modules["trio"]
    return httpx


def network_errors() -> tuple[type[Exception], ...]:
    """What a request may raise for a network failure: :class:`TransportError`, and
    httpx's errors from a body as it is read. For an ``except`` clause, which evaluates it
    only once an exception comes: by then a request has imported httpx (and if none has,
    this imports it as :func:`_import_httpx` does, not as a plain ``import httpx``)."""
    httpx = _import_httpx()
    return (TransportError, httpx.HTTPError)


class HttpClient:
    """A thread-safe HTTP client; one per command is plenty."""

    def __init__(self, opts: HttpOptions | None = None, transport: Any = None) -> None:
        self.opts = opts or HttpOptions()
        self._policy = self.opts.policy
        self._transport = transport
        self._httpx: httpx.Client | None = None  # made at the first request (_client)
        self._making = threading.Lock()
        self._closed = False
        self._watch = _Watch(self.opts)

    def _client(self, url: str) -> httpx.Client:
        """The httpx client, made at the first request, to ``url``: first a TCP connection
        to its host is started (:mod:`wgtpm._preconnect`), so that it comes up while httpx
        and httpcore are imported, then those are."""
        client = self._httpx
        if client is not None:
            return client
        with self._making:
            if self._httpx is None:
                if self._closed:
                    raise RuntimeError("this HTTP client is closed")
                connect = min(10.0, self.opts.timeout)
                if self._transport is None:
                    from . import _preconnect

                    _preconnect.ahead(url, connect)
                httpx = _import_httpx()
                from . import _httptransport

                limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
                transport = self._transport
                self._httpx = httpx.Client(
                    follow_redirects=False,
                    timeout=httpx.Timeout(self.opts.timeout, connect=connect),
                    transport=transport
                    if transport is not None
                    else _httptransport.transport(limits),
                    headers={"User-Agent": self.opts.user_agent},
                    limits=limits,
                )
            return self._httpx

    def close(self) -> None:
        self._watch.stop()
        with self._making:
            client, self._httpx, self._closed = self._httpx, None, True
        if client is not None:
            client.close()
        if self._transport is None:
            from . import _preconnect

            _preconnect.drop()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sleep(
        self,
        attempt: int,
        headers: Mapping[str, str] | None,
        url: str,
        why: str = "",
        method: str = "GET",
    ) -> None:
        wait = self._policy.wait_for(attempt, retry_after(headers) if headers is not None else None)
        if wait is None:
            raise TransportError(
                url,
                f"server asks to retry after {retry_after(headers or {}) or 0:.0f}s, longer than "
                f"the {self.opts.max_retry_after:.0f}s wgtpm waits; try again later",
            )
        network().notice(
            redact(
                f"{method} {shown_url(url)}: {why or 'failed'}; retrying in {wait:.1f}s "
                f"(try {attempt + 2} of {self.opts.retries + 1})"
            )
        )
        _interrupt.sleep(wait)

    def _gave_up(self, exc: TransportError, url: str, tries: int) -> TransportError:
        """``exc`` saying how many tries were made and which setting allows more."""
        if tries <= 1 or exc.final:
            return exc
        return TransportError(
            url, f"{exc.reason} (gave up after {tries} tries; WGTPM_HTTP_RETRIES sets how many)"
        )

    @contextlib.contextmanager
    def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
    ) -> Iterator[httpx.Response]:
        """One request with redirects followed safely; the response is streamed."""
        client = self._client(url)  # made at the first request (httpx imported then)
        import httpx

        register_userinfo(url)
        first = origin(url)
        hdrs = dict(headers or {})
        if not any(k.lower() == "authorization" for k in hdrs):
            auth = _netrc_auth(url)
            if auth:
                hdrs["Authorization"] = auth
        cur, cur_params = url, params
        for _ in range(self.opts.max_redirects + 1):
            _interrupt.check()
            send = forwarded(hdrs, url, cur)
            live = self._watch.begin(method, cur)
            try:
                try:
                    req = client.build_request(method, cur, headers=send, params=cur_params)
                except httpx.InvalidURL as exc:
                    live.fail(type(exc).__name__)
                    raise self._error(cur, exc) from exc
                try:
                    resp = client.send(req, stream=True)
                except httpx.InvalidURL as exc:
                    # httpx parses a redirect's Location, whether it follows redirects or not
                    live.fail(type(exc).__name__)
                    raise RedirectError(
                        url,
                        cur,
                        f"refused a redirect: the server's Location is not a valid URL ({exc})",
                    ) from exc
                except httpx.HTTPError as exc:
                    live.fail(type(exc).__name__)
                    raise self._error(cur, exc) from exc
                live.answered(resp)
                if resp.status_code in REDIRECTS and "location" in resp.headers:
                    # read to the end (it is small) so the connection is kept for the next request
                    with contextlib.suppress(httpx.HTTPError):
                        _read_capped(resp, MAX_ERROR_BODY, None, cut=True)
                    resp.close()
                    nxt = _redirect_target(url, cur, resp.headers["location"])
                    if not _internal(first[1]) and _internal(origin(nxt)[1]):
                        raise RedirectRefusedError(url, nxt)
                    cur, cur_params = nxt, None
                    continue
                try:
                    yield resp
                finally:
                    resp.close()
                return
            finally:
                self._watch.end(live)
        raise RedirectError(
            url,
            cur,
            f"more than {self.opts.max_redirects} redirects in a row (the last to "
            f"{_shown_target(cur)}): the server redirects in a loop; tell its owner",
        )

    def _error(self, url: str, exc: Exception, method: str = "GET") -> TransportError:
        """The :class:`TransportError` of a failed request (:class:`UnknownHostError` when
        the resolver says the host's name does not exist)."""
        import ssl  # loaded by then: httpx imports it

        import httpx

        if isinstance(exc, httpx.InvalidURL):
            return InvalidURLError(url, f"not a valid URL ({exc})", method=method)
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_NAME:
                host = urlsplit(url).hostname or url
                return UnknownHostError(
                    url,
                    f"no such host: {host} (check the module path, the URL, or WGTPROXY)",
                    method=method,
                )
            if isinstance(cause, ssl.SSLCertVerificationError):
                host = urlsplit(url).hostname or url
                return CertificateError(
                    url,
                    f"the TLS certificate of {host} is not trusted "
                    f"({cause.verify_message or cause.reason}); where a proxy on your "
                    "network re-signs TLS, set SSL_CERT_FILE to its CA bundle",
                    method=method,
                )
            cause = cause.__cause__ or cause.__context__
        return TransportError(url, self._reason(url, exc), method=method)

    def _reason(self, url: str, exc: Exception) -> str:
        """What went wrong with a request, and what the user can do about it."""
        import httpx

        text = f"{type(exc).__name__}: {exc}"
        host = urlsplit(url).netloc.rsplit("@", 1)[-1]
        if isinstance(exc, httpx.ConnectTimeout):
            return f"{text} (cannot connect to {host}: check the network, or WGTPROXY)"
        if isinstance(exc, httpx.TimeoutException):
            return (
                f"{text} (no answer from {host} for {self.opts.timeout:g}s; "
                "WGTPM_HTTP_TIMEOUT sets how long to wait)"
            )
        if isinstance(exc, httpx.ConnectError):
            return f"{text} (cannot connect: check the network, or WGTPROXY)"
        return text

    @staticmethod
    def _retryable(status: int) -> bool:
        return status == 429 or 500 <= status < 600

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        ok: Collection[int] = (200,),
        method: str = "GET",
        limit: int = MAX_METADATA,
        file: bool = False,
    ) -> httpx.Response:
        """GET ``url`` with retries; the body is read, at most ``limit`` decoded bytes of it.

        Raises :class:`HTTPStatusError` unless the status is in ``ok``,
        :class:`ResponseTooLargeError` for a longer body, and
        :class:`DeadlineExceededError` when it all takes longer than
        ``HttpOptions.deadline`` (the waits between tries not counted). With
        ``file`` the body is a file's bytes, not metadata: instead of the deadline,
        each try must keep ``HttpOptions.min_rate`` bytes a second (:class:`_MinRate`).
        """
        pace: _Pace = (
            _MinRate(url, self.opts.min_rate, self.opts.rate_window)
            if file
            else _Deadline(url, self.opts.deadline)
        )
        attempt = 0
        while True:
            pace.begin()
            try:
                with self._send(method, url, headers, params) as resp:
                    if resp.status_code in ok:
                        body = _read_capped(resp, limit, pace)
                        return _buffered(resp, body)
                    body = _read_capped(resp, MAX_ERROR_BODY, pace, cut=True)
                    if not self._retryable(resp.status_code) or attempt >= self.opts.retries:
                        raise HTTPStatusError(resp.status_code, str(resp.url), resp.headers, body)
                    rh: Mapping[str, str] | None = resp.headers
                    why = f"HTTP {resp.status_code}"
            except network_errors() as exc:
                _interrupt.check()
                err = exc if isinstance(exc, TransportError) else self._error(url, exc)
                if err.final or attempt >= self.opts.retries or refused_for_good(url, exc):
                    raise self._gave_up(err, url, attempt + 1) from exc
                rh, why = None, err.reason
            pace.check()  # out of time: no wait, no other try
            slept = time.monotonic()
            self._sleep(attempt, rh, url, why)
            pace.waited(time.monotonic() - slept)
            attempt += 1

    def get_bytes(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        limit: int = MAX_METADATA,
        file: bool = False,
    ) -> bytes:
        """The body of a 200 answer to GET ``url``, at most ``limit`` bytes (see :meth:`get`)."""
        return self.get(url, headers=headers, limit=limit, file=file).content

    @contextlib.contextmanager
    def stream(
        self, url: str, *, headers: Mapping[str, str] | None = None, offset: int = 0
    ) -> Iterator[httpx.Response]:
        """GET ``url`` for streaming, from byte ``offset``; yields a 200 or 206 response.

        Retries happen only before the body starts; a cut in the middle of
        the body is the caller's to resume with a new ``offset``. An
        identity-encoded body is read :data:`DOWNLOAD_READ` bytes at a time
        (as the socket has them), so ``iter_bytes`` yields chunks up to that size.
        """
        hdrs = dict(headers or {})
        if offset:
            hdrs["Range"] = f"bytes={offset}-"
        attempt = 0
        while True:
            stack = contextlib.ExitStack()
            try:
                resp = stack.enter_context(self._send("GET", url, hdrs, None))
            except TransportError as exc:
                stack.close()
                _interrupt.check()
                if attempt >= self.opts.retries or exc.final or refused_for_good(url, exc):
                    raise self._gave_up(exc, url, attempt + 1) from exc
                self._sleep(attempt, None, url, exc.reason)
                attempt += 1
                continue
            with stack:
                if resp.status_code in (200, 206):
                    from ._httptransport import BODY, Body

                    body = resp.extensions.get(BODY)
                    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
                    if isinstance(body, Body) and encoding in ("", "identity"):
                        body.read_more(DOWNLOAD_READ)  # until the body closes
                    yield resp
                    return
                body = _read_capped(resp, MAX_ERROR_BODY, None, cut=True)
                if not self._retryable(resp.status_code) or attempt >= self.opts.retries:
                    raise HTTPStatusError(resp.status_code, str(resp.url), resp.headers, body)
                rh = resp.headers
            self._sleep(attempt, rh, url, f"HTTP {resp.status_code}")
            attempt += 1

    # ---- writes (publishing): apart from the read path above ---------------------

    def send(
        self,
        method: str,
        url: str,
        *,
        content: Body = None,
        headers: Mapping[str, str] | None = None,
        credentials: Iterable[Credential] = (),
        retry: bool | None = None,
        limit: int = MAX_METADATA,
    ) -> httpx.Response:
        """Send one request with a body (POST, PUT, PATCH, DELETE); any status is answered.

        ``content`` is bytes, or a function that gives the body's chunks (a
        file streamed while it uploads; called again for each try; set
        ``Content-Length`` in ``headers`` or it goes chunked). Each of
        ``credentials`` adds its header when the URL has its origin
        (:meth:`Credential.headers_for`). No redirect is followed (a token
        must not follow it, and a redirected body would be lost): a 3xx is
        answered like any other status. A network error, a 5xx or a 429 is
        retried as :meth:`get` retries only for an idempotent request:
        ``retry=None`` takes HTTP's word (PUT and DELETE are, POST and PATCH
        are not); a caller that knows better says ``True`` or ``False``. Of the answer at
        most ``limit`` bytes of a 2xx body are read
        (:class:`ResponseTooLargeError` beyond), :data:`MAX_ERROR_BODY` of another.

        Raises :class:`TransportError` (naming the method and URL, secrets
        redacted) when no complete answer came back.
        """
        client = self._client(url)  # made at the first request (httpx imported then)
        import httpx

        register_userinfo(url)
        hdrs = dict(headers or {})
        for cred in credentials:
            hdrs.update(cred.headers_for(url))
        if retry is None:
            retry = method.upper() in IDEMPOTENT
        attempt = 0
        while True:
            _interrupt.check()
            live = self._watch.begin(method, url)
            rh: Mapping[str, str] | None = None
            try:
                body = content() if callable(content) else content
                req = client.build_request(method, url, headers=hdrs, content=body)
                resp = client.send(req, stream=True)
                live.answered(resp)
                try:
                    ok = 200 <= resp.status_code < 300
                    data = _read_capped(resp, limit if ok else MAX_ERROR_BODY, None, cut=not ok)
                finally:
                    resp.close()
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                live.fail(type(exc).__name__)
                err = self._error(url, exc, method)
                if not retry or err.final or attempt >= self.opts.retries:
                    raise err from exc
                why = err.reason
            else:
                if not (
                    retry and self._retryable(resp.status_code) and attempt < self.opts.retries
                ):
                    return _buffered(resp, data)
                rh, why = resp.headers, f"HTTP {resp.status_code}"
            finally:
                self._watch.end(live)
            self._sleep(attempt, rh, url, why, method)
            attempt += 1


def _buffered(resp: httpx.Response, body: bytes) -> httpx.Response:
    """``resp`` with ``body``, its (decoded) bytes, read: what :meth:`HttpClient.get` and
    :meth:`HttpClient.send` return. The encoding and length headers of the wire are dropped,
    since ``body`` is already decoded."""
    import httpx

    return httpx.Response(
        resp.status_code,
        headers=[
            (k, v)
            for k, v in resp.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ],
        content=body,
        request=resp.request,
    )


def _read_capped(
    resp: httpx.Response, limit: int, pace: _Pace | None, *, cut: bool = False
) -> bytes:
    """The decoded body of ``resp``, counted while it streams.

    Over ``limit`` bytes: the first ``limit`` when ``cut``, else
    :class:`ResponseTooLargeError`, raised before the rest is received (also
    at once when ``Content-Length`` already says so). ``pace`` is told of
    every chunk, and raises when the body comes too slowly.
    """
    url = str(resp.url)
    declared = resp.headers.get("content-length", "")
    if not cut and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLargeError(url, limit)
    chunks: list[bytes] = []
    have = 0
    for chunk in resp.iter_bytes():
        _interrupt.check()
        if pace is not None:
            pace.chunk(len(chunk))
        have += len(chunk)
        if have > limit:
            if not cut:
                raise ResponseTooLargeError(url, limit)
            chunks.append(chunk[: len(chunk) - (have - limit)])
            break
        chunks.append(chunk)
    return b"".join(chunks)


class _Pace(Protocol):
    """How slowly a body read whole (:meth:`HttpClient.get`) may come; raises when too slowly."""

    def begin(self) -> None:
        """A try starts."""

    def chunk(self, n: int) -> None:
        """``n`` more bytes of the body came."""

    def check(self) -> None:
        """A try failed: raise if no other may be made."""

    def waited(self, seconds: float) -> None:
        """The client waited ``seconds`` before the next try."""


class _Deadline:
    """A metadata request's pace: all of it within ``seconds`` (:data:`METADATA_DEADLINE`),
    every try included, the waits between tries not (each is bounded and announced)."""

    def __init__(self, url: str, seconds: float) -> None:
        self.url = url
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def begin(self) -> None:
        pass

    def chunk(self, n: int) -> None:
        self.check()

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise DeadlineExceededError(self.url, self.seconds)

    def waited(self, seconds: float) -> None:
        self.at += seconds


class _MinRate:
    """A file's pace (``get(..., file=True)``): each try brings at least ``rate`` bytes a
    second over each ``window`` seconds, as a download must (:data:`FILE_MIN_RATE`); a
    slower one is cut with a :class:`TransportError`, which is retried."""

    def __init__(self, url: str, rate: int, window: float) -> None:
        self.url = url
        self.rate = rate
        self.window = window
        self.since, self.got = time.monotonic(), 0

    def begin(self) -> None:
        self.since, self.got = time.monotonic(), 0

    def chunk(self, n: int) -> None:
        self.got += n
        elapsed = time.monotonic() - self.since
        if elapsed < self.window:
            return
        if self.got < self.rate * elapsed:
            raise TransportError(
                self.url, f"slower than {self.rate} bytes/s for {self.window:g}s; cut"
            )
        self.since, self.got = time.monotonic(), 0

    def check(self) -> None:
        pass

    def waited(self, seconds: float) -> None:
        pass


class _Live:
    """One request in flight: when it last heard from the server, and what it got."""

    def __init__(self, method: str, url: str) -> None:
        self.method = method
        self.url = url
        self.started = self.last = time.monotonic()
        self.status: int | None = None
        self.error: str | None = None
        self.nbytes = 0
        self.noticed = False
        self._resp: httpx.Response | None = None

    def answered(self, resp: httpx.Response) -> None:
        self.status = resp.status_code
        self.last = time.monotonic()
        self.noticed = False
        self._resp = resp

    def fail(self, what: str) -> None:
        self.error = what

    def idle(self, now: float) -> float:
        """Seconds since the server last sent something (headers or body bytes)."""
        resp = self._resp
        if resp is not None:
            n = resp.num_bytes_downloaded
            if n != self.nbytes:
                self.nbytes, self.last, self.noticed = n, now, False
        return now - self.last


def _range_shown(live: _Live) -> str:
    """`` bytes 30.0 MiB-120.0 MiB of 120.0 MiB``: the part of the file a 206 holds (a
    resumed download), from its ``Content-Range``; ``""`` for any other answer."""
    resp = live._resp
    cr = resp.headers.get("content-range", "") if resp is not None and live.status == 206 else ""
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", cr.strip())
    if m is None:
        return ""
    first, last, total = m.groups()
    of = f" of {human_size(int(total))}" if total != "*" else ""
    return f" bytes {human_size(int(first))}-{human_size(int(last) + 1)}{of}"


class _Watch:
    """The requests in flight of one client: says which URL is slow, and traces (``-x``).

    A daemon thread looks at them a few times a second while there are any;
    a request that has heard nothing for ``slow_after`` seconds gets one notice
    (again if it stalls again after more bytes).
    """

    def __init__(self, opts: HttpOptions) -> None:
        self._opts = opts
        self._lock = threading.Lock()
        self._live: set[_Live] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def begin(self, method: str, url: str) -> _Live:
        live = _Live(method, url)
        with self._lock:
            self._live.add(live)
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="http-watch", daemon=True)
                self._thread.start()
        return live

    def end(self, live: _Live) -> None:
        with self._lock:
            self._live.discard(live)
        if tracing():
            live.idle(time.monotonic())
            took = (time.monotonic() - live.started) * 1000
            got = live.error or (str(live.status) if live.status is not None else "interrupted")
            got += _range_shown(live)
            network().notice(
                f"{live.method} {shown_url(live.url)} -> {got} ({human_size(live.nbytes)}, "
                f"{took:.0f} ms)"
            )

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._wake.set()

    def _run(self) -> None:
        slow = self._opts.slow_after
        while not self._wake.wait(min(0.25, slow / 4)):
            now = time.monotonic()
            with self._lock:
                live = list(self._live)
            for r in live:
                idle = r.idle(now)
                if idle >= slow and not r.noticed:
                    r.noticed = True
                    what = "no answer" if r.status is None else "no bytes"
                    network().notice(
                        f"{r.method} {shown_url(r.url)}: {what} for {idle:.0f}s, still waiting "
                        f"(up to {self._opts.timeout:g}s: WGTPM_HTTP_TIMEOUT)"
                    )
