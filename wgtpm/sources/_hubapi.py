"""The Hugging Face Hub's HTTP API, as :mod:`wgtpm.sources.huggingface` reads it.

:class:`HubApi` holds one endpoint and its token and makes every request: a GET
of an API URL with the Hub's errors (``X-Error-Code``) turned into module errors,
paginated listings (``Link: rel="next"``), and the answers the source needs,
checked and parsed::

    GET /api/models/OWNER/REPO/refs                       refs()
    GET /api/models/OWNER/REPO/revision/REV?blobs=true    revision(): commit, time, files
    GET /api/models/OWNER/REPO/commits/REV?p=N            history()
    GET /api/models/OWNER/REPO/tree/REV?recursive=true    tree()

It caches nothing: which answers are kept, and for how long, is the source's
business.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._errors import FetchError, ModuleError, NotFoundError
from ..httpclient import Credential
from ._base import FileRequest
from ._hosted import parse_json, parse_time, repo_elems

if TYPE_CHECKING:
    import httpx

    from ..httpclient import HttpClient

__all__ = ["MAX_PAGES", "HubApi", "HubFile", "Rev", "repo_id"]

#: Pages of a listing (tree, history) followed before giving up.
MAX_PAGES = 1000


@dataclass(frozen=True)
class Rev:
    """A commit and its time."""

    commit: str
    time: datetime


@dataclass(frozen=True, slots=True)  # one per file of a commit: 100,000 of them
class HubFile:
    """A file of a commit as the API lists it: ``lfs_sha256`` for files stored with LFS."""

    path: str
    size: int | None
    blob_id: str | None
    lfs_sha256: str | None = None


class HubApi:
    """The API of the Hub at ``endpoint``; ``token`` ``None`` means ``HF_TOKEN``, else the
    token ``hf auth login`` saved, looked up at the first request."""

    def __init__(self, http: HttpClient, endpoint: str, token: str | None) -> None:
        self.http = http
        self.endpoint = endpoint
        self._token = token
        self._token_known = token is not None

    # ---- credentials --------------------------------------------------------

    def token(self) -> str | None:
        """``HF_TOKEN``, else the token the Hugging Face CLI saved, else ``None``."""
        if not self._token_known:
            tok = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
            if not tok:
                tok = _saved_token()
            self._token, self._token_known = tok or None, True
        return self._token

    def headers(self, url: str) -> dict[str, str]:
        token = self.token()
        if not token:
            return {}
        return Credential(self.endpoint, "Authorization", f"Bearer {token}").headers_for(url)

    def file_request(self, path: str, commit: str, name: str) -> FileRequest:
        """The download of file ``name`` at ``commit``: the bytes, or a redirect to a CDN."""
        url = f"{self.endpoint}/{repo_id(path)}/resolve/{commit}/{quote(name)}"
        return FileRequest(url, self.headers(url))

    # ---- requests -----------------------------------------------------------

    def url(self, path: str, *elems: str) -> str:
        rid = repo_id(path)
        return "/".join([f"{self.endpoint}/api/models/{rid}", *(quote(e, safe="") for e in elems)])

    def get(self, path: str, version: str | None, what: str, url: str) -> httpx.Response:
        """GET an API URL (retried as the HTTP client retries), errors as module errors."""
        from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

        try:
            return self.http.get(url, headers=self.headers(url))
        except HTTPStatusError as exc:
            raise self._status_error(path, version, what, exc) from exc
        except (ResponseTooLargeError, TransportError) as exc:
            raise FetchError(path, version, f"{what}: {exc}") from exc

    def _status_error(self, path: str, version: str | None, what: str, exc: Any) -> ModuleError:
        """The error the Hub means by a status and its ``X-Error-Code``."""
        rid = repo_id(path)
        code = {k.lower(): v for k, v in exc.headers.items()}.get("x-error-code", "")
        if code == "GatedRepo":
            return FetchError(
                path,
                version,
                f"{what}: {rid} is gated: accept its conditions on {self.endpoint}/{rid} "
                "and set HF_TOKEN to a token of that account",
            )
        if code == "RepoNotFound" or (exc.status == 401 and not code):
            hint = "" if self.token() else " (if it is private, set HF_TOKEN)"
            return NotFoundError(
                path, version, f"{what}: no repository {rid} at {self.endpoint}{hint}"
            )
        if code == "RevisionNotFound":
            return NotFoundError(path, version, f"{what}: no such revision in {rid}")
        if exc.status in (404, 410):
            return NotFoundError(path, version, f"{what}: not found (HTTP {exc.status})")
        return FetchError(path, version, f"{what}: {exc}")

    def json(self, path: str, version: str | None, what: str, url: str) -> Any:
        return parse_json(self.get(path, version, what, url).content, path, version, what)

    def pages(self, path: str, version: str | None, what: str, url: str) -> list[Any]:
        """Every item of a paginated listing (``Link: rel="next"``)."""
        items: list[Any] = []
        next_url: str | None = url
        for _ in range(MAX_PAGES):
            if next_url is None:
                return items
            resp = self.get(path, version, what, next_url)
            page = parse_json(resp.content, path, version, what)
            if not isinstance(page, list):
                raise FetchError(path, version, f"{what}: the Hub answered with no list")
            items.extend(page)
            nxt = resp.links.get("next", {}).get("url")
            next_url = nxt if isinstance(nxt, str) and nxt else None
        raise FetchError(path, version, f"{what}: more than {MAX_PAGES} pages")

    # ---- answers ------------------------------------------------------------

    def refs(self, path: str, kind: str) -> list[tuple[str, str]]:
        """(name, commit) of the repository's ``tags`` or ``branches``."""
        refs = self.json(path, None, "listing refs", self.url(path, "refs"))
        items = refs.get(kind) if isinstance(refs, dict) else None
        if not isinstance(items, list):
            raise FetchError(path, None, "listing refs: the Hub answered with something else")
        return [
            (r["name"], r["targetCommit"])
            for r in items
            if isinstance(r, dict)
            and isinstance(r.get("name"), str)
            and isinstance(r.get("targetCommit"), str)
        ]

    def revision(
        self, path: str, rev: str | None, query: str
    ) -> tuple[Rev, dict[str, HubFile] | None]:
        """The commit and commit time ``rev`` (``None``: the default branch) names, and the
        files of that commit when the answer lists them with their details (one round trip
        for both); ``query`` is the version the errors name."""
        what = f"resolving {rev}" if rev else "reading the default branch"
        url = self.url(path, "revision", rev) if rev else self.url(path)
        info = self.json(path, query, what, url + "?blobs=true")
        if not isinstance(info, dict):
            raise FetchError(path, query, f"{what}: the Hub answered with something else")
        sha, modified = info.get("sha"), info.get("lastModified")
        if not isinstance(sha, str) or not sha or not isinstance(modified, str):
            raise FetchError(path, query, f"{what}: the Hub did not say which commit it is")
        try:
            when = parse_time(modified)
        except ValueError as exc:
            raise FetchError(path, query, f"{what}: the Hub sent a bad time ({exc})") from exc
        return Rev(sha, when.replace(microsecond=0)), _files(info.get("siblings"))

    def history(self, path: str, commit: str, what: str) -> list[str]:
        """The ids of ``commit`` and its ancestors, newest first."""
        items = self.pages(path, None, what, self.url(path, "commits", commit))
        return [c["id"] for c in items if isinstance(c, dict) and isinstance(c.get("id"), str)]

    def tree(self, path: str, version: str, commit: str) -> dict[str, HubFile]:
        """Every file of ``commit``, from the recursive tree listing (for a Hub whose
        revision answer had no file details)."""
        what = f"listing the files of commit {commit[:12]}"
        url = self.url(path, "tree", commit) + "?recursive=true&expand=true"
        tree = {}
        for e in self.pages(path, version, what, url):
            if not isinstance(e, dict) or e.get("type") != "file":
                continue  # folders
            f = _file(e.get("path"), e.get("size"), e.get("oid"), e.get("lfs"))
            if f is None:
                raise FetchError(path, version, f"{what}: the Hub listed a file wrongly")
            tree[f.path] = f
        return tree


def repo_id(path: str) -> str:
    """``hf.co/acme/tiny/v2`` -> ``acme/tiny``; raises :class:`NotFoundError` for other paths."""
    elems = repo_elems(path, "hf.co")
    if elems is None or len(elems) != 2:
        raise NotFoundError(path, None, "not a Hugging Face module path (want hf.co/OWNER/REPO)")
    return f"{elems[0]}/{elems[1]}"


def _saved_token() -> str | None:
    """The token ``hf auth login`` saved: ``$HF_TOKEN_PATH``, else ``$HF_HOME/token``."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    where = Path(os.environ.get("HF_TOKEN_PATH") or os.path.join(home, "token"))
    try:
        tok = where.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return tok or None


def _file(path: Any, size: Any, blob_id: Any, lfs: Any) -> HubFile | None:
    """A file entry from the API's fields, or ``None`` when they have the wrong types."""
    if not isinstance(path, str) or not isinstance(size, int) or not isinstance(blob_id, str):
        return None
    if lfs is None:
        return HubFile(path, size, blob_id)
    if not isinstance(lfs, dict):
        return None
    lsize, lsha = lfs.get("size"), lfs.get("sha256", lfs.get("oid"))
    if not isinstance(lsize, int) or not isinstance(lsha, str):
        return None
    return HubFile(path, lsize, blob_id, lsha)


def _files(siblings: Any) -> dict[str, HubFile] | None:
    """The files of a revision answer's ``siblings``; ``None`` when they lack details
    (``size``, ``blobId``: a Hub that ignored ``blobs=true``) or are malformed."""
    if not isinstance(siblings, list):
        return None
    out = {}
    for s in siblings:
        if not isinstance(s, dict):
            return None
        f = _file(s.get("rfilename"), s.get("size"), s.get("blobId"), s.get("lfs"))
        if f is None:
            return None
        out[f.path] = f
    return out
