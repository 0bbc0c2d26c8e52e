"""Programs from the PAW program hub: ``programasweights.com/ID`` and ``programasweights.com/OWNER/NAME``.

A program ID (16 to 64 lower-case hex digits) names immutable content; a
slug ``OWNER/NAME`` is a moving reference that the hub resolves to an ID.
Either way a version is the pseudo-version of the ID, with the time the
program was created::

    programasweights.com/acme/triage@latest
        -> v0.0.0-20260501000700-8f14e45fceea        (ID 8f14e45fceea167a5a36dedd4bea2543)

The hub has no releases, so :meth:`PawHubSource.versions` lists none and
``latest`` is what the slug points at now (for an ID path: the ID). A
pseudo-version of a slug module stays fetchable after the slug has moved on:
its 12 hex digits are looked up in the slug's history.

A version holds one file, ``program.paw`` (artifact ``program``, kind
``paw``), the bundle as the hub serves it. The name is the same for every
version, so a build that uses ``programasweights.com/acme/triage/program.paw``
does not change when the slug moves. The synthesised index::

    {"schema": 1, "module": "programasweights.com/acme/triage",
     "version": "v0.0.0-20260501000700-8f14e45fceea",
     "commit": "8f14e45fceea167a5a36dedd4bea2543", "time": "2026-05-01T00:07:00Z",
     "files": [{"path": "program.paw", "size": 23120417, "sha256": "...",
                "artifact": "program", "kind": "paw"}],
     "build": {"synthesised": "programasweights.com", "program_id": "8f14e45f..."}}

The hub states no hash for a bundle, so making the index downloads it once,
hashes it and checks that it is a ``.paw`` the SDK would load (ZIP members,
sizes, safe names, ``meta.json`` naming this program ID); from then on the
sha256 in wgt.sum pins it like any other file. wgt.mod is ``module PATH\\n``.

The API (``PAW_API_URL``, default ``https://programasweights.com``;
``PAW_API_KEY`` is sent as ``X-API-Key`` to that origin only, never along a
redirect)::

    GET /api/v1/programs/resolve/OWNER%2FNAME   {"program_id": ID}
    GET /api/v1/programs/OWNER/NAME/versions    {"versions": [{"program_id": ID, ...}]}
    GET /api/v1/programs/ID                     {"created_at": "2026-05-01T00:07:00Z", ...}
    GET /api/v1/programs/ID/download            202 + Retry-After while the bundle is being
                                                generated (waited out up to max_wait), then
                                                the bundle or a redirect to a CDN
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, NotFoundError
from .._retry import Backoff
from ..httpclient import Credential
from ..kinds import PAW
from ._base import FileRequest, RevInfo
from ._hosted import (
    BodyKeeper,
    MetaCache,
    env_secret,
    env_url,
    get_json,
    http_error,
    parse_time,
    rfc3339,
)

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["DEFAULT_API_URL", "FILE_NAME", "PawHubSource", "from_host"]

DEFAULT_API_URL = "https://programasweights.com"
HOST = "programasweights.com"
#: The one file of every PAW module version.
FILE_NAME = "program.paw"
#: The SDK refuses larger archives.
MAX_BUNDLE = 256 << 20
KEEP_BUNDLE = 64 << 20  # bundles up to this size are kept from hashing for the download
#: Downloads of a bundle that is cut or corrupt before giving up.
ATTEMPTS = 3
#: Reconnects after a bundle download was cut, and the waits between.
CUT_RETRY = Backoff(attempts=ATTEMPTS, base=0.1)
_ID = re.compile(r"^[a-f0-9]{16,64}\Z")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class _Ref:
    program_id: str | None  # for programasweights.com/ID
    slug: str | None  # for programasweights.com/OWNER/NAME


@dataclass(frozen=True)
class _Program:
    id: str
    time: datetime

    @property
    def version(self) -> str:
        return _version.pseudo_version(None, self.time, self.id)


class PawHubSource:
    """Programs from the PAW hub's API.

    ``api_url`` and ``api_key`` default to ``PAW_API_URL`` and
    ``PAW_API_KEY``; a bundle still being generated (202) is waited for up to
    ``max_wait`` seconds, sleeping with ``sleep``.
    """

    name = "direct"

    def __init__(
        self,
        http: HttpClient,
        *,
        api_url: str | None = None,
        api_key: str | None = None,
        max_wait: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = http
        self.api_url = env_url(api_url, "PAW_API_URL", DEFAULT_API_URL)
        self.api_key = env_secret(api_key, "PAW_API_KEY")
        self._cred = Credential(self.api_url, "X-API-Key", self.api_key) if self.api_key else None
        self.max_wait = max_wait
        self._sleep = sleep
        self._lock = threading.Lock()
        self._programs: dict[tuple[str, str], _Program] = {}  # (path, version) -> program
        self._ready: set[str] = set()
        self._bodies = BodyKeeper(KEEP_BUNDLE)  # (path, version) -> bundle, handed to file() once

    # ---- the Source protocol ---------------------------------------------

    def versions(self, path: str) -> list[str]:
        _parse(path)
        return []

    def info(self, path: str, query: str) -> RevInfo:
        ref = _parse(path)
        if _version.is_valid(query):
            prog = self._program(path, query)
        elif query == "latest" or query == ref.program_id:
            pid = ref.program_id or self._resolve_slug(path, query, ref)
            prog = self._meta(path, query, pid)
        elif re.fullmatch(r"[0-9a-f]{12,64}", query):
            prog = self._meta(path, query, self._find_id(path, query, ref, query))
        else:
            raise NotFoundError(
                path, query, "a PAW program is fetched @latest, by program ID or by pseudo-version"
            )
        with self._lock:
            self._programs[(path, prog.version)] = prog
        return RevInfo(prog.version, rfc3339(prog.time), prog.id)

    def mod(self, path: str, version: str) -> bytes:
        self._program(path, version)
        return _index.synthetic_mod(_module.normalise(path))

    def index(self, path: str, version: str) -> bytes:
        prog = self._program(path, version)
        size, sha256 = self._hash_bundle(path, version, prog.id)
        entry = _index.IndexEntry(FILE_NAME, size, sha256, artifact="program", kind=PAW)
        build = {"synthesised": HOST, "program_id": prog.id}
        idx = _index.build_index(
            _module.normalise(path),
            version,
            [entry],
            time=rfc3339(prog.time),
            commit=prog.id,
            build=build,
        )
        return idx.to_json()

    def known_files(self, path: str, version: str) -> Sequence[_index.IndexEntry]:
        return ()  # one file, whose hash the index is made of

    def file(self, path: str, version: str, name: str) -> FileRequest:
        if name != FILE_NAME:
            raise NotFoundError(
                path, version, f"{name}: a PAW program version holds only {FILE_NAME}"
            )
        prog = self._program(path, version)
        with self._lock:
            ready = prog.id in self._ready
        body = self._bodies.take((path, version))
        if body is not None:
            url = self._download_url(prog.id)
            return FileRequest(url, self._headers(url), body)
        if not ready:
            self._wait_ready(path, version, prog.id)
        url = self._download_url(prog.id)
        return FileRequest(url, self._headers(url))

    # ---- the API ------------------------------------------------------------

    def _headers(self, url: str) -> dict[str, str]:
        """``X-API-Key`` when ``url`` is on the hub's origin."""
        return self._cred.headers_for(url) if self._cred is not None else {}

    def _download_url(self, pid: str) -> str:
        return f"{self.api_url}/api/v1/programs/{pid}/download"

    def _get_json(self, path: str, version: str | None, url: str, what: str) -> Any:
        from ..httpclient import HTTPStatusError

        try:
            return get_json(
                self.http, url, self._headers(url), path=path, version=version, what=what
            )
        except FetchError as exc:
            cause = exc.__cause__
            if isinstance(cause, HTTPStatusError) and cause.status == 401:
                fix = "check PAW_API_KEY" if self.api_key else "set PAW_API_KEY"
                raise FetchError(
                    path, version, f"{what}: the PAW hub wants an API key ({fix})"
                ) from cause
            raise

    def _resolve_slug(self, path: str, query: str, ref: _Ref) -> str:
        slug = str(ref.slug)
        url = f"{self.api_url}/api/v1/programs/resolve/{quote(slug, safe='')}"
        doc = self._get_json(path, query, url, f"resolving {slug}")
        pid = doc.get("program_id") if isinstance(doc, dict) else None
        if not isinstance(pid, str) or not _ID.match(pid):
            raise FetchError(
                path, query, f"resolving {slug}: the PAW hub returned no valid program ID"
            )
        return pid

    def _find_id(self, path: str, version: str, ref: _Ref, prefix: str) -> str:
        """The program ID starting with ``prefix``: the path's ID, the slug's now, or one it had."""
        if ref.program_id is not None:
            if ref.program_id.startswith(prefix):
                return ref.program_id
            raise NotFoundError(
                path, version, f"this module is program {ref.program_id}, not {prefix}"
            )
        current = self._resolve_slug(path, version, ref)
        if current.startswith(prefix):
            return current
        url = f"{self.api_url}/api/v1/programs/{quote(str(ref.slug))}/versions"
        doc = self._get_json(path, version, url, f"listing the history of {ref.slug}")
        history = doc.get("versions", []) if isinstance(doc, dict) else None
        if not isinstance(history, list):
            raise FetchError(
                path, version, f"listing the history of {ref.slug}: 'versions' is not a list"
            )
        for v in history:
            pid = v.get("program_id") if isinstance(v, dict) else None
            if isinstance(pid, str) and _ID.match(pid) and pid.startswith(prefix):
                return pid
        raise NotFoundError(path, version, f"{ref.slug} never pointed at a program {prefix}")

    def _meta(self, path: str, version: str, pid: str) -> _Program:
        doc = self._get_json(
            path, version, f"{self.api_url}/api/v1/programs/{pid}", f"program {pid}"
        )
        created = doc.get("created_at") if isinstance(doc, dict) else None
        try:
            when = parse_time(created) if isinstance(created, str) else _EPOCH
        except ValueError:
            when = _EPOCH
        return _Program(pid, when.replace(microsecond=0))

    def _program(self, path: str, version: str) -> _Program:
        """The program a pseudo-version names, checked against the hub's record of it."""
        with self._lock:
            prog = self._programs.get((path, version))
        if prog is not None:
            return prog
        ref = _parse(path)
        if not _version.is_pseudo(version) or _version.pseudo_base(version) is not None:
            raise NotFoundError(
                path, version, "PAW programs have no releases; their versions are v0.0.0-TIME-ID"
            )
        prog = self._meta(
            path, version, self._find_id(path, version, ref, _version.pseudo_rev(version))
        )
        if prog.version != version:
            raise NotFoundError(path, version, f"program {prog.id} is version {prog.version}")
        with self._lock:
            self._programs[(path, version)] = prog
        return prog

    # ---- the bundle ---------------------------------------------------------

    def _wait_ready(self, path: str, version: str, pid: str) -> None:
        """Wait until the download answers with the bundle rather than 202."""
        self._download(path, version, pid, None)

    def _hash_bundle(self, path: str, version: str, pid: str) -> tuple[int, str]:
        problem = ""
        for _ in range(ATTEMPTS):
            with tempfile.NamedTemporaryFile(prefix="wgtpm-", suffix=".paw") as tmp:
                size, digest = self._download(path, version, pid, tmp)
                tmp.flush()
                problem = _bundle_problem(Path(tmp.name), pid)
                if not problem and size <= KEEP_BUNDLE:
                    # Hand these bytes to the downloader (which verifies them against the
                    # index like any download) instead of making it fetch them again.
                    tmp.seek(0)
                    self._bodies.keep((path, version), tmp.read())
            if not problem:
                return size, digest
        raise FetchError(
            path, version, f"program {pid}: the hub serves no valid .paw bundle ({problem})"
        )

    def _download(
        self, path: str, version: str, pid: str, out: IO[bytes] | None
    ) -> tuple[int, str]:
        """Stream the bundle into ``out`` (or only wait for it, with ``None``); returns (size, sha256)."""
        from ..httpclient import HTTPStatusError, network_errors, retry_after

        url = self._download_url(pid)
        waited = 0.0  # counted in Retry-After seconds, as the SDK counts
        cuts = 0
        while True:
            h, size = hashlib.sha256(), 0
            try:
                with self.http.stream(url, headers=self._headers(url)) as resp:
                    if out is None:
                        break
                    out.seek(0)
                    out.truncate()
                    for chunk in resp.iter_bytes(1 << 20):
                        size += len(chunk)
                        if size > MAX_BUNDLE:
                            raise FetchError(
                                path, version, f"program {pid}: bundle over {MAX_BUNDLE} bytes"
                            )
                        h.update(chunk)
                        out.write(chunk)
                break
            except HTTPStatusError as exc:
                if exc.status != 202:
                    raise http_error(exc, path, version, f"downloading program {pid}") from exc
                wait = retry_after(exc.headers) or 3.0
                waited += wait
                if waited > self.max_wait:
                    raise FetchError(
                        path,
                        version,
                        f"program {pid} is still being generated after {self.max_wait:.0f}s; "
                        "try again in a few minutes",
                    ) from exc
                self._sleep(wait)
            except network_errors() as exc:
                if getattr(exc, "final", False) or CUT_RETRY.last(cuts):
                    raise FetchError(path, version, f"downloading program {pid}: {exc}") from exc
                CUT_RETRY.sleep(cuts)
                cuts += 1
        with self._lock:
            self._ready.add(pid)
        return size, h.hexdigest()


def from_host(http: HttpClient, meta: MetaCache) -> PawHubSource:
    """The source :mod:`wgtpm.sources.hosts` makes for ``programasweights.com`` (program
    IDs are immutable, so nothing is revalidated through ``meta``)."""
    return PawHubSource(http)


def _parse(path: str) -> _Ref:
    p = _module.normalise(path)
    elems = p.split("/")
    if elems[0] == HOST and len(elems) == 2 and _ID.match(elems[1]):
        return _Ref(elems[1], None)
    if elems[0] == HOST and len(elems) == 3:
        return _Ref(None, f"{elems[1]}/{elems[2]}")
    raise NotFoundError(
        path, None, f"not a PAW module path (want {HOST}/PROGRAM_ID or {HOST}/OWNER/NAME)"
    )


def _bundle_problem(file: Path, pid: str) -> str:
    """Why ``file`` is not a bundle of program ``pid`` (archive rules of the SDK), or ``""``."""
    from ..paw.bundle import BundleError, read_bundle

    try:
        bundle = read_bundle(file)
    except BundleError as exc:
        return "; ".join(exc.problems)
    if bundle.program_id != pid:
        return f"meta.json names program {bundle.program_id!r}"
    return ""
