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

Every request goes through :meth:`~wgtpm.httpclient.HttpClient.send` and is
retried there on network errors, 5xx and 429 (``WGTPM_HTTP_RETRIES``, with
backoff); a refusal (4xx) is not. All three may be sent again safely: an
upload and the commit are idempotent, and a start whose answer was lost
leaves an upload nobody commits, which the registry expires.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import ModuleError
from .._report import Reporter
from ..httpclient import (
    Credential,
    HttpClient,
    HTTPStatusError,
    TransportError,
    redact,
    redact_url,
    register_userinfo,
)
from ..module import escape_path
from ._http import Answer, file_chunks, send
from ._target import Published, Release, token_needed

__all__ = ["TOKEN_ENV", "RegistryTarget"]

TOKEN_ENV = "WGTPM_TOKEN"
API = "/api/v1"


class RegistryTarget:
    """A :class:`~wgtpm.publish.PublishTarget` over a wgtpm registry at ``url``."""

    def __init__(self, url: str, client: HttpClient, *, token: str | None = None) -> None:
        """``client`` is the caller's, who closes it."""
        self.url = url.rstrip("/")
        register_userinfo(self.url)  # a password in --to is a secret like the token
        self._token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        # A Credential registers the token with redact() and yields it for this origin only.
        self._cred = Credential(self.url, "Authorization", f"Bearer {self._token}")
        self._client = client

    @property
    def name(self) -> str:
        return f"registry {redact_url(self.url)}"

    def _auth(self) -> dict[str, str]:
        return self._cred.headers_for(self.url) if self._token else {}

    def _send(self, method: str, url: str, **body: Any) -> Answer:
        creds = [self._cred] if self._token else []
        return send(self._client, method, url, credentials=creds, retry=True, **body)

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
        start = self._call(
            "start upload",
            lambda: self._send(
                "POST",
                f"{self.url}{API}/uploads",
                json={
                    "module": release.module,
                    "version": release.version,
                    "index": release.index.decode(),
                    "private": release.private,
                    "h1": release.h1,
                },
            ),
            release,
        )
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
            up = self._call(f"upload {path}", self._put(start.doc, sha, by_sha[sha]), release)
            if up.status not in (200, 201):
                raise self._refused(f"upload {path}", up, release)
        body = {"h1": release.h1}
        if release.attestation:  # beside the version, outside h1
            body["attestation"] = release.attestation.decode()
        if release.signature:  # the model-signing bundle over the index (wgtpm.trust)
            body["signature"] = release.signature.decode()
        done = self._call(
            "commit",
            lambda: self._send("POST", f"{self.url}{start.doc['commit_url']}", json=body),
            release,
        )
        if done.status not in (200, 201):
            raise self._refused("commit", done, release)
        return Published(page, bool(done.doc.get("created", done.status == 201)))

    def _put(self, upload: dict[str, Any], sha: str, file: Path) -> Callable[[], Answer]:
        url = f"{self.url}{upload['files_url']}{sha}"
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(file.stat().st_size),
        }
        return lambda: self._send("PUT", url, headers=headers, content=file_chunks(file))

    def _call(self, what: str, request: Callable[[], Answer], release: Release) -> Answer:
        """``request()`` (retried by the client), a network failure said as a module error."""
        try:
            return request()
        except TransportError as exc:
            raise ModuleError(
                release.module,
                release.version,
                redact(
                    f"{what} at {self.name} failed: {exc}; nothing was published, "
                    "run the same publish again"
                ),
            ) from exc

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
        return ModuleError(
            release.module,
            release.version,
            redact(
                f"{what} at {self.name}: HTTP {answer.status}: {answer.error}{hint}; "
                "nothing was published"
            ),
        )
