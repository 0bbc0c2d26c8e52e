"""The errors of the HTTP client, and how a failure of httpx becomes one.

::

    WgtpmError
     +-- HTTPStatusError         a status the caller did not expect
     +-- ResponseTooLargeError   a body read whole over its limit
     +-- TransportError          no complete answer (retried unless ``final``)
          +-- DeadlineExceededError, UnknownHostError, InvalidURLError, CertificateError
          +-- RedirectError      a loop, or a redirect to a URL that is not http(s)
               +-- RedirectRefusedError   from a public address to a private one

Every message names the URL, its user information shown as ``***@`` and every
registered secret as ``***`` (:mod:`._credentials`). httpx's exceptions are
translated here (:func:`transport_error`), never leaked.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from .._errors import WgtpmError
from ._credentials import printable, redact, redact_url, shown_target

__all__ = [
    "CertificateError",
    "DeadlineExceededError",
    "HTTPStatusError",
    "InvalidURLError",
    "RedirectError",
    "RedirectRefusedError",
    "ResponseTooLargeError",
    "TransportError",
    "UnknownHostError",
    "network_errors",
    "transport_error",
]


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
        tail = f": {printable(detail[0][:200])}" if detail else ""
        super().__init__(redact(f"GET {redact_url(url)}: HTTP {status}{tail}"))


#: The resolver's answers that a name does not exist (not "cannot answer now").
_NO_SUCH_NAME = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, n)}


class TransportError(WgtpmError):
    """The request did not complete: refused, reset, timed out, or a broken response."""

    #: Trying again cannot help (a refused redirect, an unknown host, the deadline).
    final = False

    def __init__(self, url: str, message: str, *, method: str = "GET") -> None:
        self.url = url
        self.reason = message
        super().__init__(redact(f"{method} {redact_url(url)}: {message}"))


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
            f"refused a redirect to {shown_target(target)}: a public server may not send "
            "wgtpm to a loopback, link-local or private address",
        )


class ResponseTooLargeError(WgtpmError):
    """A body read whole that is longer than its limit (decoded bytes, counted while streaming)."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = limit
        super().__init__(
            f"GET {redact_url(url)}: the response is larger than the {limit} bytes allowed for it; "
            "the server is misbehaving or this is not the file it should be"
        )


def transport_error(
    url: str, exc: Exception, timeout: float, method: str = "GET"
) -> TransportError:
    """The :class:`TransportError` of a request that failed with httpx's ``exc``
    (:class:`UnknownHostError` when the resolver says the host's name does not exist);
    ``timeout`` is the client's, which a message about a timeout names."""
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
    return TransportError(url, _reason(url, exc, timeout), method=method)


def _reason(url: str, exc: Exception, timeout: float) -> str:
    """What went wrong with a request, and what the user can do about it."""
    import httpx

    text = f"{type(exc).__name__}: {exc}"
    host = urlsplit(url).netloc.rsplit("@", 1)[-1]
    if isinstance(exc, httpx.ConnectTimeout):
        return f"{text} (cannot connect to {host}: check the network, or WGTPROXY)"
    if isinstance(exc, httpx.TimeoutException):
        return (
            f"{text} (no answer from {host} for {timeout:g}s; "
            "WGTPM_HTTP_TIMEOUT sets how long to wait)"
        )
    if isinstance(exc, httpx.ConnectError):
        return f"{text} (cannot connect: check the network, or WGTPROXY)"
    return text


def network_errors() -> tuple[type[Exception], ...]:
    """What a request may raise for a network failure: :class:`TransportError`, and
    httpx's errors from a body as it is read. For an ``except`` clause, which evaluates it
    only once an exception comes: by then a request has imported httpx (and if none has,
    this imports it as :func:`wgtpm._compat.httpx.import_httpx` does, not as a plain
    ``import httpx``)."""
    from .._compat.httpx import import_httpx

    httpx = import_httpx()
    return (TransportError, httpx.HTTPError)
