"""Publishing a module version as a GitHub release: ``github.com/OWNER/REPO[/DIR][/vN]``.

What consumers read back is :mod:`wgtpm.sources.github`: a published
(non-draft) release tagged ``vX.Y.Z`` (``DIR/vX.Y.Z`` for a module in a
subdirectory) whose assets are ``wgt.mod``, ``wgt.index.json`` and every file
of the index, each logical path stored under :func:`~wgtpm.sources.github.asset_name`
(``xor/weights.safetensors`` -> ``xor--weights.safetensors``), and the build's
SLSA provenance statement ``wgt.slsa.json`` (:mod:`._slsa`), which the index
does not list.

The flow, all or nothing
------------------------
1. **check**: the release is of this target's module; ``GITHUB_TOKEN`` is
   set; every path can be an asset name; the repository exists. A published
   release of the tag with the same h1 makes the publish a no-op; with
   another h1 (or a tag with no release) it is refused, naming both.
2. **draft**: the draft release of the tag that an earlier attempt left is
   reused, else one is created (``POST /repos/O/R/releases``, ``draft: true``,
   ``target_commitish`` the release's commit). A draft has no tag and is
   invisible to consumers.
3. **assets**: an asset already on the draft with the same size and
   ``sha256:`` digest is kept; any other (a ``starter`` left by a broken
   upload, other bytes, a name the release does not hold) is deleted. Each
   missing asset is uploaded to the release's ``upload_url`` and retried as
   :data:`UPLOAD_RETRY` says; after a failed try the draft is listed again,
   and an asset of that name is kept when complete and deleted otherwise.
4. **publish**: ``PATCH`` the draft with ``draft: false``, which creates the
   tag at ``target_commitish`` in the same step (so repositories with
   immutable releases work: nothing is changed after publication).

A failure at any step leaves at most the draft, which the next attempt
reuses. A published release is never modified.

Credentials: ``GITHUB_TOKEN`` goes as ``Authorization: Bearer`` to the API's
origin (``GITHUB_API_URL``, default ``https://api.github.com``) and to the
origin of the draft's ``upload_url`` only when that is on the API's host
(GitHub Enterprise, loopback tests) or is ``uploads.github.com`` for
``api.github.com``; never to a download redirect. Each is a
:class:`~wgtpm.httpclient.Credential` that the shared
:class:`~wgtpm.httpclient.HttpClient` attaches by origin, for reads and
writes (:meth:`~wgtpm.httpclient.HttpClient.send`, which retries a DELETE
but never a POST or PATCH: this module retries those itself after looking
at what the failed try left).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import ModuleError, UsageError
from .._report import Reporter, begin
from .._retry import Backoff
from ..sources._hosted import repo_elems
from ..sources.github import (
    DEFAULT_API_URL,
    GitHubSource,
    asset_name,
    asset_problem,
)
from ..trust import SIG_ASSET
from ._githubapi import ReleasesApi, WriteFailed
from ._slsa import SLSA_ASSET
from ._target import Published, Release, listed_versions, token_needed

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["UPLOAD_RETRY", "GitHubTarget"]

#: Tries of one asset upload (and of creating the draft), and the waits between.
UPLOAD_RETRY = Backoff(attempts=4, base=0.5, cap=8.0)
#: Bytes read from a file per chunk while uploading it.
CHUNK = 1 << 20
INDEX = "wgt.index.json"


@dataclass(frozen=True)
class _Blob:
    """One asset to upload: its bytes (in memory or a file), size and sha256."""

    name: str
    size: int
    sha256: str
    path: Path | None = None
    data: bytes = b""

    def chunks(self) -> Iterator[bytes]:
        if self.path is None:
            yield self.data
            return
        with self.path.open("rb") as f:
            while chunk := f.read(CHUNK):
                yield chunk


class GitHubTarget:
    """Publishes releases of ``module`` to its GitHub repository (see the module docstring)."""

    def __init__(self, module: str, http: HttpClient, environ: Mapping[str, str]) -> None:
        self.module = _module.normalise(module)
        elems = repo_elems(self.module, "github.com")
        if elems is None or len(elems) < 2:
            raise UsageError(
                f"{module}: not a GitHub module path (want github.com/OWNER/REPO[/DIR])"
            )
        self.owner, self.repo = elems[0], elems[1]
        self.http = http
        self.api_url = (environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        token = environ.get("GITHUB_TOKEN") or None
        self.api = ReleasesApi(http, self.api_url, self.owner, self.repo, token)

    @property
    def name(self) -> str:
        return f"github.com/{self.owner}/{self.repo}"

    # ---- the PublishTarget protocol -------------------------------------------

    def ready(self) -> None:
        if self.api.token is None:
            raise token_needed(
                self.name,
                "GITHUB_TOKEN",
                "to a GitHub token that can write releases (contents: write)",
            )

    def published_versions(self, module: str) -> list[str]:
        return listed_versions(self._source(), module)

    def check(self, release: Release) -> None:
        tag = self._check_release(release)
        self.api.get(f"{self.api.repo_url()}", release, f"repository {self.owner}/{self.repo}")
        if self._existing(release, tag) is None and self._tag_exists(release, tag):
            raise UsageError(
                f"{release.module}@{release.version}: tag {tag} exists in {self.name} but has no "
                "published release; wgtpm publishes the tag with the release. Delete the tag "
                "(git push --delete origin " + tag + ") or publish another version"
            )

    def publish(self, release: Release, reporter: Reporter) -> Published:
        tag = self._check_release(release)
        existing = self._existing(release, tag)
        if existing is not None:
            reporter.notice(f"{self.name}: release {tag} is already published with this h1")
            return Published(str(existing.get("html_url") or ""), created=False)
        blobs = _blobs(release)
        draft = self._draft(release, tag, reporter)
        self._sync_assets(release, draft, blobs, reporter)
        done = self._publish_draft(release, draft, tag)
        reporter.notice(f"{self.name}: published release {tag}")
        return Published(str(done.get("html_url") or ""), created=True)

    # ---- checks -------------------------------------------------------------------

    def _check_release(self, release: Release) -> str:
        """The tag of ``release``, after the checks that need no network."""
        where = f"{release.module}@{release.version}"
        if _module.normalise(release.module) != self.module:
            raise UsageError(
                f"{where}: cannot publish to {self.name}: the target is for module {self.module}"
            )
        self.ready()
        tag = release.tag
        for path in [*release.files, INDEX]:
            if asset_name(path) == SLSA_ASSET:
                raise UsageError(
                    f"{where}: {path} would be stored as the asset {SLSA_ASSET}, which holds "
                    "the release's SLSA provenance; rename it"
                )
            if asset_name(path) == SIG_ASSET:
                raise UsageError(
                    f"{where}: {path} would be stored as the asset {SIG_ASSET}, which holds "
                    "the release's signature; rename it"
                )
            problem = asset_problem(path)
            if problem is not None:
                raise UsageError(f"{where}: {path} cannot be a GitHub release asset: {problem}")
        return tag

    def _existing(self, release: Release, tag: str) -> dict[str, Any] | None:
        """The published release of ``tag`` when it holds this h1; refused when another."""
        url = f"{self.api.repo_url()}/releases/tags/{quote(tag, safe='/')}"
        rel = self.api.get(url, release, f"release {tag}", missing_ok=True)
        if rel is None:
            return None
        try:
            data = self._source().index(release.module, release.version)
            h1 = _index.parse(data, release.module, release.version).h1()
        except ModuleError as exc:
            h1 = f"an index wgtpm cannot read ({exc.message})"
        if h1 != release.h1:
            raise UsageError(
                f"{release.module}@{release.version}: {self.name} has release {tag} already, "
                f"with {h1}; this release is {release.h1}. A published version never changes: "
                "publish a new version"
            )
        return rel

    def _tag_exists(self, release: Release, tag: str) -> bool:
        url = f"{self.api.repo_url()}/git/ref/tags/{quote(tag, safe='/')}"
        return self.api.get(url, release, f"tag {tag}", missing_ok=True) is not None

    # ---- the draft ------------------------------------------------------------------

    def _draft(self, release: Release, tag: str, reporter: Reporter) -> dict[str, Any]:
        """The draft release of ``tag`` an earlier attempt left, else a new one."""
        found = self._find_draft(release, tag)
        if found is not None:
            reporter.notice(f"{self.name}: reusing draft release {tag} (id {found.get('id')})")
            if release.commit and found.get("target_commitish") != release.commit:
                found = self.api.send_json(
                    "PATCH", str(found["url"]), {"target_commitish": release.commit}, release
                )
            return found
        body: dict[str, Any] = {
            "tag_name": tag,
            "name": tag,
            "body": release.notes,
            "draft": True,
            "prerelease": _version.is_prerelease(release.version),
        }
        if release.commit:
            body["target_commitish"] = release.commit
        for attempt in UPLOAD_RETRY.attempts_range():
            try:
                return self.api.send_json("POST", f"{self.api.repo_url()}/releases", body, release)
            except ModuleError as exc:
                cause = exc.__cause__
                if not isinstance(cause, WriteFailed) or not cause.retryable(
                    UPLOAD_RETRY.max_retry_after
                ):
                    raise
                found = self._find_draft(release, tag)  # created, but the answer was lost
                if found is not None:
                    return found
                if UPLOAD_RETRY.last(attempt):
                    raise
            UPLOAD_RETRY.sleep(attempt, cause.retry_after)
        raise AssertionError("unreachable")

    def _find_draft(self, release: Release, tag: str) -> dict[str, Any] | None:
        for rel in self.api.list(f"{self.api.repo_url()}/releases", release, "listing releases"):
            if rel.get("draft") and rel.get("tag_name") == tag:
                return rel
        return None

    def _publish_draft(self, release: Release, draft: dict[str, Any], tag: str) -> dict[str, Any]:
        body: dict[str, Any] = {"draft": False, "tag_name": tag}
        if release.commit:
            body["target_commitish"] = release.commit
        try:
            done = self.api.send_json("PATCH", str(draft["url"]), body, release)
        except ModuleError:
            url = f"{self.api.repo_url()}/releases/tags/{quote(tag, safe='/')}"
            pub = self.api.get(url, release, f"release {tag}", missing_ok=True)
            if pub is not None and pub.get("id") == draft.get("id"):
                return pub  # published; only the answer was lost
            raise
        if done.get("draft") is not False:
            raise ModuleError(
                release.module, release.version, f"GitHub did not publish draft release {tag}"
            )
        return done

    # ---- assets -----------------------------------------------------------------------

    def _sync_assets(
        self, release: Release, draft: dict[str, Any], blobs: dict[str, _Blob], reporter: Reporter
    ) -> None:
        assets_url = f"{self.api.repo_url()}/releases/{draft['id']}/assets"
        have = {str(a.get("name")): a for a in self.api.list(assets_url, release, "listing assets")}
        for name, asset in have.items():
            if name not in blobs or not _complete(asset, blobs[name]):
                reporter.notice(f"{self.name}: deleting draft asset {name} ({_why(asset)})")
                self.api.delete(asset, release)
        upload_url = str(draft.get("upload_url") or "").split("{", 1)[0]
        if not upload_url:
            raise ModuleError(release.module, release.version, "the draft has no upload_url")
        self.api.trust_upload_url(upload_url)
        for name, blob in blobs.items():
            if name in have and _complete(have[name], blob):
                continue
            self._upload(release, assets_url, upload_url, blob, reporter)

    def _upload(
        self, release: Release, assets_url: str, upload_url: str, blob: _Blob, reporter: Reporter
    ) -> None:
        """Upload ``blob``, retrying; what a failed try left under its name is kept or deleted."""
        url = f"{upload_url}?name={quote(blob.name)}"
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(blob.size),
        }
        for attempt in UPLOAD_RETRY.attempts_range():
            wait: float | None = None
            begin(reporter, blob.name, blob.size, upload=True)
            try:
                asset = self.api.send(
                    "POST", url, content=_progress(blob, reporter), headers=headers
                ).body
                if isinstance(asset, dict) and _complete(asset, blob, trust_size=True):
                    return
                problem = "GitHub stored other bytes than were sent"
                if isinstance(asset, dict):
                    self.api.delete(asset, release)
            except WriteFailed as exc:
                if not (
                    exc.retryable(UPLOAD_RETRY.max_retry_after) or exc.code() == "already_exists"
                ):
                    raise self.api.error(release, f"uploading {blob.name}", exc) from exc
                problem, wait = str(exc), exc.retry_after
                for asset in self.api.list(assets_url, release, "listing assets"):
                    if asset.get("name") == blob.name:
                        if _complete(asset, blob):
                            return  # it arrived; only the answer was lost
                        self.api.delete(asset, release)
            finally:
                reporter.finish(blob.name)
            if UPLOAD_RETRY.last(attempt):
                raise ModuleError(
                    release.module,
                    release.version,
                    f"uploading {blob.name} to draft release of {self.name} failed "
                    f"{attempt + 1} times ({problem}); the draft is kept and the next "
                    "`wgtpm publish` reuses it",
                )
            reporter.warning(f"{self.name}: uploading {blob.name} again: {problem}")
            UPLOAD_RETRY.sleep(attempt, wait)

    # ---- the read side ------------------------------------------------------------

    def _source(self) -> GitHubSource:
        """A fresh read side (no release cached from before this call)."""
        return GitHubSource(self.http, api_url=self.api_url, token=self.api.token or "")


# ---- helpers -------------------------------------------------------------------------


def local_files(release: Release) -> list[tuple[_index.IndexEntry, Path]]:
    """Every file of the release's index with the file holding it, hashed now.

    Refused (:class:`UsageError`): an index entry with no file, a file whose
    size or sha256 is not its entry's (changed on disk since the build), a
    file the index does not list.
    """
    idx = _index.parse(release.index, release.module, release.version)
    where = f"{release.module}@{release.version}"
    out = []
    for entry in idx.files:
        path = release.files.get(entry.path)
        if path is None:
            raise UsageError(f"{where}: the index lists {entry.path}, which the release lacks")
        size, sha = _hash_file(path)
        if (size, sha) != (entry.size, entry.sha256):
            raise UsageError(
                f"{where}: {path} is not the {entry.path} the index lists (sha256 {sha[:12]}…, "
                f"size {size}; the index says {entry.sha256[:12]}…, {entry.size}); build again"
            )
        out.append((entry, path))
    extra = sorted(set(release.files) - {e.path for e in idx.files})
    if extra:
        raise UsageError(f"{where}: files not in the index: {', '.join(extra)}")
    return out


def _blobs(release: Release) -> dict[str, _Blob]:
    """Asset name -> what to upload: every file of the index, the index itself, the
    SLSA statement and the signature."""
    out = {
        asset_name(e.path): _Blob(asset_name(e.path), e.size, e.sha256, path=p)
        for e, p in local_files(release)
    }
    sha = hashlib.sha256(release.index).hexdigest()
    out[INDEX] = _Blob(INDEX, len(release.index), sha, data=release.index)
    if release.attestation:  # beside the index, outside h1
        sha = hashlib.sha256(release.attestation).hexdigest()
        att = release.attestation
        out[SLSA_ASSET] = _Blob(SLSA_ASSET, len(att), sha, data=att)
    if release.signature:  # the model-signing bundle over the index (wgtpm.trust)
        sig = release.signature
        out[SIG_ASSET] = _Blob(SIG_ASSET, len(sig), hashlib.sha256(sig).hexdigest(), data=sig)
    return out


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _progress(blob: _Blob, reporter: Reporter) -> Callable[[], Iterator[bytes]]:
    """The body of ``blob``'s upload, telling ``reporter`` of every chunk."""

    def chunks() -> Iterator[bytes]:
        for chunk in blob.chunks():
            yield chunk
            reporter.advance(blob.name, len(chunk))

    return chunks


def _complete(asset: Mapping[str, Any], blob: _Blob, *, trust_size: bool = False) -> bool:
    """Whether ``asset`` holds exactly ``blob``: uploaded, same size, same ``sha256:`` digest.

    An asset without a digest (GitHub Enterprise before 2025) counts only when
    ``trust_size`` (the answer to the upload that just sent these bytes).
    """
    if asset.get("state", "uploaded") != "uploaded" or asset.get("size") != blob.size:
        return False
    digest = asset.get("digest")
    if digest is None:
        return trust_size
    return bool(digest == f"sha256:{blob.sha256}")


def _why(asset: Mapping[str, Any]) -> str:
    if asset.get("state", "uploaded") != "uploaded":
        return f"state {asset.get('state')}, an interrupted upload"
    return "not this release's bytes"
