"""The registry target: a wgtpm registry's publish API (``registry/api.md``), ``--to URL``.

Three steps, as the API has them: **start** an upload with the index
(``POST /api/v1/uploads``), **upload** each file the registry lacks
(``PUT /api/v1/uploads/{id}/files/{sha256}``), **commit**
(``POST /api/v1/uploads/{id}/commit``, carrying the build's SLSA provenance
statement as ``attestation``: :mod:`._slsa`, served at
``@v/$version.slsa.json``, and the release's signature as ``signature``:
:mod:`wgtpm.trust`, served at ``@v/$version.sig``; neither is one of the
version's files). Only the
commit makes the version
visible, atomically, so a failure at any earlier point leaves nothing
published; the next attempt starts a new upload and sends only what the
registry still lacks. The token comes from ``WGTPM_TOKEN`` and is sent as
``Authorization: Bearer`` to the registry's own origin only; no message shows it. Nor does one show a password in
the URL (``--to https://user:PASSWORD@reg.example``): the target's name and
every URL it prints go through :func:`~wgtpm.httpclient.redact_url`, its
messages through :func:`~wgtpm.httpclient.redact`.

Every request goes through :meth:`~wgtpm.httpclient.HttpClient.send`. A step
that meets a network error, a 5xx or a 429 is tried again with backoff
(:data:`STEP_BACKOFF`, full jitter, waits up to 5 s or the server's
``Retry-After``) until it has failed for ``WGTPM_HTTP_DEADLINE`` seconds in a
row (:attr:`~wgtpm.httpclient.HttpOptions.deadline`, 30 by default), so a
publish rides out a registry's restart or a store's outage of that long
instead of the few seconds that ``WGTPM_HTTP_RETRIES`` tries last; a refusal
(another 4xx) is final at once. All three steps may be sent again safely: an
upload and the commit are idempotent, a file already received is not asked
for again (the upload lives in the registry's database, so it survives the
registry's restart), and a start whose answer was lost leaves an upload
nobody commits, which the registry expires. A commit recorded whose answer
was lost is answered 404 when tried again (the upload is gone with its
commit): the version is then looked up with a new start, which says it is
committed. A step that still fails at the deadline ends the publish with one
line naming the step, the registry and the setting; before the commit,
nothing is published then.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import _interrupt
from .._errors import ModuleError
from .._report import Reporter
from .._retry import Backoff
from ..httpclient import (
    Credential,
    HttpClient,
    HTTPStatusError,
    TransportError,
    redact,
    redact_url,
    register_userinfo,
    retry_after,
)
from ..module import escape_path
from ._http import Answer, file_chunks, is_transient, send
from ._target import Published, Release, token_needed

__all__ = ["STEP_BACKOFF", "TOKEN_ENV", "RegistryTarget"]

TOKEN_ENV = "WGTPM_TOKEN"
API = "/api/v1"
#: The waits between tries of a publish step that failed (network, 5xx, 429): uniform in
#: [0, min(cap, base * 2**try)]; the tries go on for ``WGTPM_HTTP_DEADLINE`` seconds.
STEP_BACKOFF = Backoff(base=0.5, cap=5.0)


class RegistryTarget:
    """A :class:`~wgtpm.publish.PublishTarget` over a wgtpm registry at ``url``."""

    def __init__(
        self,
        url: str,
        client: HttpClient,
        *,
        token: str | None = None,
        backoff: Backoff = STEP_BACKOFF,
    ) -> None:
        """``client`` is the caller's, who closes it; a failed step is tried again with
        ``backoff`` for ``client.opts.deadline`` seconds (``WGTPM_HTTP_DEADLINE``)."""
        self.url = url.rstrip("/")
        register_userinfo(self.url)  # a password in --to is a secret like the token
        self._token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        # A Credential registers the token with redact() and yields it for this origin only.
        self._cred = Credential(self.url, "Authorization", f"Bearer {self._token}")
        self._client = client
        self._backoff = backoff
        self._deadline = client.opts.deadline

    @property
    def name(self) -> str:
        return f"registry {redact_url(self.url)}"

    def _auth(self) -> dict[str, str]:
        return self._cred.headers_for(self.url) if self._token else {}

    def _send(self, method: str, url: str, **body: Any) -> Answer:
        creds = [self._cred] if self._token else []
        # not retried there: _call tries a failed step again, until the deadline
        return send(self._client, method, url, credentials=creds, retry=False, **body)

    def ready(self) -> None:
        self._need_token()

    def published_versions(self, module: str) -> list[str]:
        url = f"{self.url}/{escape_path(module)}/@v/list"
        try:
            resp = self._client.get(url, headers=self._auth(), ok=(200, 404, 410))
        except (HTTPStatusError, TransportError) as exc:
            raise ModuleError(
                module, None, redact(f"cannot list versions at {self.name}: {exc}")
            ) from exc
        return resp.text.split() if resp.status_code == 200 else []

    def check(self, release: Release) -> None:
        self._need_token()

    def _need_token(self) -> None:
        if not self._token:
            raise token_needed(
                self.name,
                TOKEN_ENV,
                "to a publish token "
                "(wgtpm registry token create --prefix MODULE-PREFIX --scope publish)",
            )

    def publish(self, release: Release, reporter: Reporter) -> Published:
        self._need_token()
        where = (release.module, release.version)
        start, _ = self._start(release, reporter)
        page = redact_url(f"{self.url}/{escape_path(release.module)}/@v/{release.version}.info")
        if start.status == 200 and start.doc.get("committed"):
            reporter.notice(f"{release.module}@{release.version} is already in {self.name}")
            return Published(page, False)
        if start.status != 201:
            raise self._refused("start upload", start, release)
        shas = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
        by_sha = {shas[path]: f for path, f in release.files.items()}
        missing = start.doc.get("missing") or []
        for i, m in enumerate(missing, 1):
            sha, path = str(m.get("sha256")), str(m.get("path"))
            if sha not in by_sha:
                raise ModuleError(
                    *where, f"{self.name} asked for a file not in the release: {path}"
                )
            reporter.notice(f"uploading {path} ({i}/{len(missing)}, {m.get('size')} bytes)")
            up, _ = self._call(
                f"upload {path}", self._put(start.doc, sha, by_sha[sha]), release, reporter
            )
            if up.status not in (200, 201):
                raise self._refused(f"upload {path}", up, release)
        body = {"h1": release.h1}
        if release.attestation:  # beside the version, outside h1
            body["attestation"] = release.attestation.decode()
        if release.signature:  # the model-signing bundle over the index (wgtpm.trust)
            body["signature"] = release.signature.decode()
        done, tries = self._call(
            "commit",
            lambda: self._send("POST", f"{self.url}{start.doc['commit_url']}", json=body),
            release,
            reporter,
        )
        if done.status == 404 and tries > 1:  # recorded by a try whose answer was lost?
            again, _ = self._start(release, reporter)
            if again.status == 200 and again.doc.get("committed"):
                return Published(page, True)
        if done.status not in (200, 201):
            raise self._refused("commit", done, release)
        return Published(page, bool(done.doc.get("created", done.status == 201)))

    def _start(self, release: Release, reporter: Reporter) -> tuple[Answer, int]:
        """Open an upload of ``release`` (or learn that it is committed)."""
        doc = {
            "module": release.module,
            "version": release.version,
            "index": release.index.decode(),
            "private": release.private,
            "h1": release.h1,
        }
        return self._call(
            "start upload",
            lambda: self._send("POST", f"{self.url}{API}/uploads", json=doc),
            release,
            reporter,
        )

    def _put(self, upload: dict[str, Any], sha: str, file: Path) -> Callable[[], Answer]:
        url = f"{self.url}{upload['files_url']}{sha}"
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(file.stat().st_size),
        }
        return lambda: self._send("PUT", url, headers=headers, content=file_chunks(file))

    def _call(
        self, what: str, request: Callable[[], Answer], release: Release, reporter: Reporter
    ) -> tuple[Answer, int]:
        """``request()`` until the registry answers it other than a network error, a 5xx
        or a 429, tried again with :attr:`_backoff` while it has failed for less than
        :attr:`_deadline` seconds in a row (a ``Retry-After`` is waited); the last answer
        and how many tries it took. A network failure past the deadline (or a final one) is
        a module error; a 5xx or 429 past it is answered, for the caller to say."""
        first: float | None = None
        attempt = 0
        while True:
            failure: TransportError | Answer
            try:
                failure = request()
            except TransportError as exc:
                if exc.final:
                    raise self._failed(what, exc, release, 0) from exc
                failure, pause, why = exc, None, exc.reason
            else:
                if not is_transient(failure):
                    return failure, attempt + 1
                pause, why = retry_after(failure.headers), f"HTTP {failure.status}"
            now = time.monotonic()
            first = now if first is None else first
            left = self._deadline - (now - first)
            wait = self._backoff.wait_for(min(attempt, 30), pause)
            if left <= 0 or wait is None:
                if isinstance(failure, Answer):
                    return failure, attempt + 1
                raise self._failed(what, failure, release, now - first) from failure
            if attempt == 0:
                reporter.notice(
                    redact(
                        f"{what} at {self.name}: {why}; trying again for up to "
                        f"{self._deadline:g}s (WGTPM_HTTP_DEADLINE)"
                    )
                )
            _interrupt.sleep(min(wait, left))
            attempt += 1

    def _failed(
        self, what: str, exc: TransportError, release: Release, waited: float
    ) -> ModuleError:
        """The module error of step ``what`` that got no answer, after ``waited`` seconds
        of tries: one line, naming the setting that allows more."""
        tried = (
            f" (no answer for {waited:.0f}s; WGTPM_HTTP_DEADLINE sets how long to keep trying)"
            if waited
            else ""
        )
        after = (
            "the version may or may not be published: run the same publish again, which "
            "is a no-op if it is"
            if what == "commit"
            else "nothing was published; run the same publish again (it sends only what "
            "the registry lacks)"
        )
        return ModuleError(
            release.module,
            release.version,
            redact(f"{what} at {self.name} failed: {exc}{tried}; {after}"),
        )

    def _refused(self, what: str, answer: Answer, release: Release) -> ModuleError:
        if answer.status == 409:  # the registry's message names both h1s; say ours if not
            ours = "" if release.h1 in answer.error else f" (this build is {release.h1})"
            return ModuleError(
                release.module,
                release.version,
                redact(f"{self.name} refused it: {answer.error}{ours}"),
            )
        hint = {
            401: f"; check {TOKEN_ENV}",
            403: f"; the token in {TOKEN_ENV} may not publish this module (its prefix or scope)",
        }.get(answer.status, "")
        if is_transient(answer):
            hint = f" (still after {self._deadline:g}s of tries; WGTPM_HTTP_DEADLINE sets how long)"
        return ModuleError(
            release.module,
            release.version,
            redact(
                f"{what} at {self.name}: HTTP {answer.status}: {answer.error}{hint}; "
                "nothing was published"
            ),
        )
