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

The package, one concept a file: :mod:`._settings` (the limits and
:class:`HttpOptions`), :mod:`._credentials` (credentials by origin and
redaction), :mod:`._errors` (the errors, and httpx's translated), :mod:`._redirects`,
:mod:`._retrying`, :mod:`._pace` (a deadline, a minimum rate), :mod:`._watch`
(the requests in flight), :mod:`._body`, :mod:`._sender` (one request and its
redirects), :mod:`._client` (:class:`HttpClient`) and :mod:`._ahead`
(:class:`Locator`: where URLs redirect to, asked ahead of their downloads). What it needs of httpx's
internals is in :mod:`wgtpm._compat.httpx`.
"""

from __future__ import annotations

from ._ahead import Locator
from ._client import Body, HttpClient
from ._credentials import (
    Credential,
    netrc_login,
    origin,
    redact,
    redact_url,
    register_secret,
    register_userinfo,
    shown_url,
)
from ._errors import (
    CertificateError,
    DeadlineExceededError,
    HTTPStatusError,
    InvalidURLError,
    RedirectError,
    RedirectRefusedError,
    ResponseTooLargeError,
    TransportError,
    UnknownHostError,
    network_errors,
)
from ._pace import RateRule
from ._redirects import forwarded
from ._retrying import retry_after
from ._settings import (
    FILE_MIN_RATE,
    FILE_RATE_WINDOW,
    MAX_ERROR_BODY,
    MAX_METADATA,
    METADATA_DEADLINE,
    HttpOptions,
)

__all__ = [
    "FILE_MIN_RATE",
    "FILE_RATE_WINDOW",
    "MAX_ERROR_BODY",
    "MAX_METADATA",
    "METADATA_DEADLINE",
    "Body",
    "CertificateError",
    "Credential",
    "DeadlineExceededError",
    "HTTPStatusError",
    "HttpClient",
    "HttpOptions",
    "InvalidURLError",
    "Locator",
    "RateRule",
    "RedirectError",
    "RedirectRefusedError",
    "ResponseTooLargeError",
    "TransportError",
    "UnknownHostError",
    "forwarded",
    "netrc_login",
    "network_errors",
    "origin",
    "redact",
    "redact_url",
    "register_secret",
    "register_userinfo",
    "retry_after",
    "shown_url",
]
