"""The registry's behaviour, without HTTP: reading hosted modules and publishing them.

:class:`Registry` joins a :class:`~registry.metadata.MetadataStore` and a
:class:`~registry.blobs.BlobStore`. The HTTP layers (:mod:`registry.protocol`
for the proxy protocol, :mod:`registry.api` for publishing) translate
requests into these calls and :mod:`registry._errors` into statuses.

Publishing is three steps (the routes are in ``registry/api.md``):

1. :meth:`Registry.start_upload` checks the token, the module path, the
   version and the index (``wgtpm.index.parse`` for that module and version,
   ``wgt.mod`` listed, the limits), stores the index bytes as a blob, and
   says which files are missing (below).
2. :meth:`Registry.file_entry` names the index entry an uploaded body must
   match; unless :meth:`Registry.has_file` says the upload may use the stored
   blob already, the caller streams the body into ``blobs.writer(sha256,
   size)``, which publishes it only when its sha256 matches, and then calls
   :meth:`Registry.file_received`.
3. :meth:`Registry.commit` checks that no file is missing, that ``wgt.mod``
   names the module, and that the h1 agrees; then records the version in one
   transaction. The same h1 again is a no-op; another h1 is a
   :class:`ConflictError` naming both.

Blobs are shared by sha256 across modules, so "stored" is not enough: a
file is *missing* unless its blob is stored with the entry's size and either
this upload sent it (``upload_blobs``) or the token can read a committed
version that lists it (a public module's, or a private one under the
token's prefix). Otherwise naming the sha256 of another tenant's private
file would publish it. A blob that is stored but not the upload's to use is
answered exactly as one that is not stored (missing, then ``stored: true``
when its bytes arrive), so the answers tell nothing about other tenants'
blobs.

Committing a (public) version also appends its two wgt.sum lines to the
checksum log, in the same database transaction
(:meth:`~registry.metadata.SqlMetadataStore.commit_version`,
:mod:`registry.sumlog`); :attr:`Registry.sumdb` serves that log
(:mod:`registry.sumdb`). Seams for later work: ``on_commit`` listeners run
after a version is first recorded (after its transaction); reads go
through :meth:`Registry.version` and friends, which the caching proxy
(:mod:`registry.proxy`, when :attr:`Registry.proxy` is set) backs with an
upstream for the modules that are not hosted here (:meth:`Registry.proxied`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from wgtpm import dirhash
from wgtpm import version as _v
from wgtpm._errors import WgtpmError
from wgtpm.index import ReleaseIndex, parse
from wgtpm.module import check_canonical, check_path, check_path_major
from wgtpm.trust._revoked import RevocationFile, Revoked

from . import tokens as _tokens
from ._errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    TooLargeError,
    UnauthorizedError,
    UpstreamError,
)
from .blobs import BlobStore
from .hfpolicy import HfPolicy
from .limits import UPLOAD_TTL_SECONDS, Limits
from .metadata import (
    CommitOutcome,
    FileRecord,
    MetadataStore,
    ModuleRecord,
    NewVersion,
    TokenRecord,
    UploadRecord,
    VersionRecord,
    now,
)

if TYPE_CHECKING:
    from wgtpm.sources import RevInfo

    from .proxy import CachingProxy
    from .sumdb import SumDB

__all__ = ["MOD_FILE", "Registry", "UploadState", "create_token", "latest_of"]

MOD_FILE = "wgt.mod"
log = logging.getLogger(__name__)
#: The largest SLSA provenance statement a commit may carry: wgtpm's own cap on reading one
#: (wgtpm.publish._slsa.MAX_ENVELOPE; a 10,000-file release's statement is about 1.5 MB).
MAX_ATTESTATION = 8 << 20
#: The largest signature a commit may carry (wgtpm.trust's MAX_BUNDLE: a 100,000-file
#: release's bundle is about 15 MB).
MAX_SIGNATURE = 64 << 20
_DUMMY_SHA = "0" * 64  # compared against when a token id is unknown, to keep timing even


def create_token(meta: MetadataStore, prefix: str, scope: str) -> tuple[str, TokenRecord]:
    """A new token for ``prefix`` and ``scope``; the string is shown once and never stored."""
    if scope not in _tokens.SCOPES:
        raise BadRequestError(f"scope must be one of {', '.join(_tokens.SCOPES)}, not {scope!r}")
    if not prefix or "," in prefix or prefix != prefix.strip() or prefix.startswith("/"):
        raise BadRequestError(
            f"a token prefix is a module path prefix like example.com/team, not {prefix!r}"
        )
    try:
        check_canonical(prefix)  # a prefix on huggingface.co would cover no publishable path
    except WgtpmError as exc:
        raise BadRequestError(str(exc)) from exc
    text, cred = _tokens.new_token()
    rec = TokenRecord(cred.id, _tokens.hash_secret(cred.secret), prefix.rstrip("/"), scope)
    meta.add_token(rec)
    return text, rec


def latest_of(versions: list[str]) -> str:
    """The highest release, else the highest pre-release, else the newest pseudo-version."""
    vs = _v.sort_versions(versions)
    tagged = [v for v in vs if not _v.is_pseudo(v)]
    return ([v for v in tagged if not _v.is_prerelease(v)] or tagged or vs)[-1]


@dataclass(frozen=True)
class UploadState:
    """An upload session as the API reports it."""

    upload: UploadRecord
    missing: list[FileRecord]
    committed: VersionRecord | None = None


@dataclass
class Registry:
    """Hosted modules on one metadata store and one blob store."""

    meta: MetadataStore
    blobs: BlobStore
    limits: Limits = field(default_factory=Limits)
    on_commit: list[Callable[[VersionRecord], None]] = field(default_factory=list)
    sumdb: SumDB | None = None  # the checksum database served under /sumdb/NAME/
    proxy: CachingProxy | None = None  # the upstream of modules not hosted here
    hf_policy: HfPolicy = field(default_factory=HfPolicy)  # the Hub API's allow-list, offline
    public_url: str = ""  # the URL clients reach it at (Config.public_base); "" if not known
    revoked: RevocationFile = field(default_factory=lambda: RevocationFile(None))  # signing keys
    _prefixes: tuple[float, list[str]] = field(default=(0.0, []), init=False, repr=False)
    _indexes: OrderedDict[str, ReleaseIndex] = field(
        default_factory=OrderedDict, init=False, repr=False
    )  # parsed indexes of open uploads, by sha256 (parsing 10,000 entries per PUT is slow)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def meta_url(self) -> str:
        """The database's URL without its password (for logs)."""
        engine = getattr(self.meta, "engine", None)
        return engine.url.render_as_string(hide_password=True) if engine is not None else "?"

    def close(self) -> None:
        """Close both stores (and the proxy's HTTP client)."""
        try:
            if self.proxy is not None:
                self.proxy.close()
            self.blobs.close()
        finally:
            self.meta.close()

    # -- tokens

    def create_token(self, prefix: str, scope: str) -> tuple[str, TokenRecord]:
        """A new token for ``prefix`` and ``scope`` (see :func:`create_token`)."""
        return create_token(self.meta, prefix, scope)

    def authenticate(self, cred: _tokens.Credentials | None) -> TokenRecord | None:
        """The stored token for ``cred``; ``None`` without credentials.

        Raises :class:`UnauthorizedError` for a token that is malformed,
        unknown or revoked.
        """
        if cred is None:
            return None
        rec = self.meta.get_token(cred.id) if cred.id else None
        ok = _tokens.secret_matches(cred.secret, rec.secret_sha256 if rec else _DUMMY_SHA)
        if rec is None or not ok or rec.revoked is not None:
            raise UnauthorizedError("the token is not valid (unknown, mistyped or revoked)")
        return rec

    @staticmethod
    def _may_publish(token: TokenRecord | None, module: str) -> None:
        if token is None:
            raise UnauthorizedError("publishing needs a token: send Authorization: Bearer TOKEN")
        if token.scope != "publish":
            raise ForbiddenError(
                f"token {token.id} has scope {token.scope}; publishing needs publish"
            )
        if not _tokens.covers(token.prefix, module):
            raise ForbiddenError(
                f"token {token.id} is for {token.prefix}, which does not cover {module}"
            )

    @staticmethod
    def _may_read(token: TokenRecord | None, module: str, private: bool) -> bool:
        return not private or (token is not None and _tokens.covers(token.prefix, module))

    # -- reading

    def _hosted_prefixes(self) -> list[str]:
        """The prefixes of every token (read for 5 s at a time): the hosted namespace."""
        t = time.monotonic()
        when, prefixes = self._prefixes
        if t - when > 5.0:
            prefixes = sorted({tok.prefix for tok in self.meta.list_tokens()})
            self._prefixes = (t, prefixes)
        return prefixes

    def proxied(self, module: str, rec: ModuleRecord | None = None) -> bool:
        """Whether ``module`` (whose row is ``rec``, when read already) is answered by the
        caching proxy: there is one, and the module was not published here and lies under
        no token's prefix, whatever its case on a host that ignores case (hosted always
        wins; :func:`~registry.tokens.reserves`)."""
        if self.proxy is None:
            return False
        rec = rec or self.meta.get_module(module)
        if rec is not None:
            return rec.proxied
        return not any(_tokens.reserves(p, module) for p in self._hosted_prefixes())

    def _visible(
        self, module: str, token: TokenRecord | None, rec: ModuleRecord | bool | None = True
    ) -> bool:
        """Whether ``module`` (whose row is ``rec`` when read already) is proxied; else 404
        for a module that is not here, or private and not covered by ``token``.

        Both answer alike, so a private module's name does not leak.
        """
        try:
            check_path(module)
            check_canonical(module)
        except WgtpmError as exc:
            raise GoneError(str(exc)) from exc
        if isinstance(rec, bool):
            rec = self.meta.get_module(module)
        if self.proxied(module, rec):
            return True
        if rec is None or not self._may_read(token, module, rec.private):
            raise NotFoundError(
                f"{module}: no such module here (a private module needs a read token)"
            )
        return False

    def readable(self, module: str, token: TokenRecord | None = None) -> bool:
        """Whether ``module`` is proxied; raises :class:`NotFoundError` when it is not here
        or is private and ``token`` does not cover it."""
        return self._visible(module, token)

    def versions(self, module: str, token: TokenRecord | None = None) -> list[str]:
        """The release versions of ``module`` (no pseudo-versions), lowest first.

        For a proxied module, the upstream's list; the cached versions when the
        upstream fails or no longer has the module (and some are cached).
        """
        proxied = self._visible(module, token)
        vs = self.meta.list_versions(module)
        if proxied:
            assert self.proxy is not None
            try:
                vs = self.proxy.versions(module)
            except (UpstreamError, NotFoundError):  # down, or the repository is gone
                if not vs:
                    raise
        return [v for v in _v.sort_versions(vs) if not _v.is_pseudo(v)]

    def resolve(
        self, module: str, query: str, token: TokenRecord | None = None
    ) -> tuple[RevInfo, bool]:
        """The ``.info`` of ``query`` and whether the module is private. ``query`` is a
        version or ``latest``; for a proxied module also a branch or a commit, as the
        upstream resolves it (a committed version is answered from here)."""
        from wgtpm.sources import RevInfo

        proxied = self._visible(module, token)
        rec = None
        if proxied and query != "latest":
            rec = self.meta.get_version(module, query) if _v.is_valid(query) else None
        elif proxied:
            assert self.proxy is not None
            try:
                return self.proxy.info(module, query), False
            except (UpstreamError, NotFoundError):
                vs = self.meta.list_versions(module)
                if not vs:
                    raise
                rec = self.meta.get_version(module, latest_of(vs))  # what is cached
        elif query == "latest":
            rec = self.latest(module, token)
        else:
            rec = self.version(module, query, token)
        if rec is None:
            assert self.proxy is not None
            return self.proxy.info(module, query), False
        return RevInfo(rec.version, rec.time or rec.created, rec.commit), rec.private

    def latest(self, module: str, token: TokenRecord | None = None) -> VersionRecord:
        """The highest release, else the highest pre-release, else the newest pseudo-version."""
        self._visible(module, token)
        vs = self.meta.list_versions(module)
        if not vs:
            raise NotFoundError(f"{module}: no versions")
        return self.version(module, latest_of(vs), token)

    def version(self, module: str, version: str, token: TokenRecord | None = None) -> VersionRecord:
        """The committed ``module@version``; a proxied one is fetched on first use."""
        proxied = self._visible(module, token)
        if not _v.is_valid(version):
            raise NotFoundError(f"{module}@{version}: not a version this registry can resolve")
        rec = self.meta.get_version(module, version)
        if rec is None and proxied:
            assert self.proxy is not None
            try:
                check_path_major(module, version)
            except WgtpmError as exc:
                raise NotFoundError(str(exc)) from exc
            return self.proxy.fill(self, module, version)
        if rec is None:
            raise NotFoundError(f"{module}@{version}: no such version here")
        return rec

    def file(
        self, module: str, version: str, path: str, token: TokenRecord | None = None
    ) -> tuple[VersionRecord, FileRecord]:
        """One file of ``module@version``; :class:`GoneError` when the version lacks it.

        One query when the version is committed (:meth:`MetadataStore.find_file`).
        """
        if not _v.is_valid(version):
            self.version(module, version, token)  # raises: 404, or 410 for a bad module path
        mod, v, rec = self.meta.find_file(module, version, path)
        self._visible(module, token, mod)
        if v is None:  # not here, or a proxied version to fetch first
            v = self.version(module, version, token)
            rec = self.meta.get_file(module, version, path)
        if rec is None:
            raise GoneError(f"{module}@{version} has no file {path!r}")
        return v, rec

    def mod_entry(self, v: VersionRecord) -> FileRecord:
        rec = self.meta.get_file(v.module, v.version, MOD_FILE)
        if rec is None:  # every committed version lists it; a broken row is a server bug
            raise NotFoundError(f"{v.module}@{v.version}: no {MOD_FILE}")
        return rec

    @staticmethod
    def info(v: VersionRecord | RevInfo) -> bytes:
        """The ``.info`` document: ``{"Version", "Time", "Commit"}``."""
        if isinstance(v, VersionRecord):
            doc: dict[str, str] = {"Version": v.version, "Time": v.time or v.created}
            if v.commit:
                doc["Commit"] = v.commit
        else:
            doc = v.to_json()
        return (json.dumps(doc) + "\n").encode()

    # -- publishing

    def _index(self, sha256: str, module: str, version: str) -> ReleaseIndex:
        with self._lock:
            idx = self._indexes.get(sha256)
            if idx is not None and idx.module == module and idx.version == version:
                self._indexes.move_to_end(sha256)
                return idx
        data = self.blobs.read(sha256, self.limits.max_index_size)
        idx = self._check_index(data, module, version)
        with self._lock:
            self._indexes[sha256] = idx
            while len(self._indexes) > 64:
                self._indexes.popitem(last=False)
        return idx

    def check_index(
        self, data: bytes, module: str, version: str, *, need_mod: bool = True
    ) -> ReleaseIndex:
        """``data`` parsed as the index of ``module@version``, within the limits; lists
        ``wgt.mod`` (unless not ``need_mod``: an index wgtpm synthesised for a repository
        it did not publish lists only the repository's files); raises
        :class:`BadRequestError` or :class:`TooLargeError`."""
        return self._check_index(data, module, version, need_mod=need_mod)

    def check_mod(self, module: str, version: str, data: bytes) -> None:
        """Raise :class:`BadRequestError` unless ``data`` is a wgt.mod declaring ``module``."""
        self._check_mod(module, version, data)

    def _check_index(
        self, data: bytes, module: str, version: str, *, need_mod: bool = True
    ) -> ReleaseIndex:
        lim = self.limits
        if len(data) > lim.max_index_size:
            raise TooLargeError(
                f"the index has {len(data)} bytes; the limit is {lim.max_index_size}"
            )
        try:
            idx = parse(data, module, version)
        except WgtpmError as exc:
            raise BadRequestError(str(exc)) from exc
        if len(idx.files) > lim.max_files_per_version:
            raise TooLargeError(
                f"{module}@{version} lists {len(idx.files)} files; the limit is {lim.max_files_per_version}"
            )
        mod = idx.entry(MOD_FILE)
        if mod is None and need_mod:
            raise BadRequestError(f"{module}@{version}: the index must list {MOD_FILE}")
        if idx.time is not None:
            try:
                datetime.fromisoformat(idx.time.replace("Z", "+00:00"))
            except ValueError:
                raise BadRequestError(
                    f"{module}@{version}: the index's time {idx.time[:40]!r} is not RFC 3339 "
                    "(like 2026-11-29T12:00:00Z)"
                ) from None
        if mod is not None and mod.size > lim.max_mod_size:
            raise TooLargeError(f"{MOD_FILE} has {mod.size} bytes; the limit is {lim.max_mod_size}")
        for e in idx.files:
            if e.size > lim.max_file_size:
                raise TooLargeError(
                    f"{e.path} has {e.size} bytes; the limit per file is {lim.max_file_size}"
                )
        total = sum(e.size for e in idx.files)
        if total > lim.max_version_size:
            raise TooLargeError(
                f"{module}@{version} has {total} bytes in all; the limit per version is {lim.max_version_size}"
            )
        return idx

    def start_upload(
        self,
        token: TokenRecord | None,
        module: str,
        version: str,
        index: bytes,
        *,
        private: bool = False,
        h1: str | None = None,
    ) -> UploadState:
        """Open an upload of ``module@version`` with its ``wgt.index.json`` bytes.

        When the version is already committed with the same h1 the state
        says so and nothing is opened; with another h1 it is a conflict.
        """
        self._may_publish(token, module)
        assert token is not None
        try:
            check_path(module)
            check_canonical(module)
            check_path_major(module, version)
        except WgtpmError as exc:
            raise BadRequestError(str(exc)) from exc
        idx = self._check_index(index, module, version)
        got = idx.h1()
        if h1 is not None and h1 != got:
            raise BadRequestError(f"the index hashes to {got}, not the {h1} the request names")
        have = self.meta.get_version(module, version)
        rec = UploadRecord(
            id=secrets.token_hex(16),
            module=module,
            version=version,
            h1=got,
            index_sha256=hashlib.sha256(index).hexdigest(),
            private=private,
            token_id=token.id,
        )
        if have is not None:
            if have.h1 != got:
                raise ConflictError(module, version, have.h1, got)
            return UploadState(rec, [], committed=have)
        self._expire_uploads()
        self.blobs.put(rec.index_sha256, [index], max_size=self.limits.max_index_size)
        self.meta.add_upload(rec)
        return UploadState(rec, self._missing(idx, rec.id, token, sent=set()))

    def _usable(
        self, shas: set[str], upload_id: str, token: TokenRecord | None, sent: set[str] | None
    ) -> set[str]:
        """Those of ``shas`` that upload ``upload_id`` may name without sending them (again):
        it sent them (``sent``, read when ``None``), or ``token`` can read a committed version
        that lists them."""
        if sent is None:
            sent = self.meta.upload_blobs(upload_id)
        ok = shas & sent
        rest = shas - ok
        if rest:
            ok |= self.meta.public_blobs(rest)
            rest -= ok
        if rest and token is not None:
            for sha, mods in self.meta.private_blob_modules(rest).items():
                if any(self._may_read(token, m, True) for m in mods):
                    ok.add(sha)
        return ok

    def _missing(
        self,
        idx: ReleaseIndex,
        upload_id: str,
        token: TokenRecord | None,
        sent: set[str] | None = None,
    ) -> list[FileRecord]:
        """The files the upload must still send, one per sha256, by path: those it may not use
        (:meth:`_usable`) and those not stored with their entry's size."""
        usable = self._usable({e.sha256 for e in idx.files}, upload_id, token, sent)
        out, seen = [], set()
        for e in sorted(idx.files, key=lambda e: e.path):
            if e.sha256 not in seen and (
                e.sha256 not in usable or self.blobs.size(e.sha256) != e.size
            ):
                out.append(FileRecord(e.path, e.size, e.sha256))
            seen.add(e.sha256)
        return out

    def _expire_uploads(self) -> None:
        cutoff = datetime.now(timezone.utc) - timedelta(seconds=UPLOAD_TTL_SECONDS)
        self.meta.delete_uploads_before(cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def _open_upload(self, upload_id: str, token: TokenRecord | None) -> UploadRecord:
        """The live upload session ``upload_id``, if ``token`` may publish its module."""
        rec = self.meta.get_upload(upload_id)
        cutoff = datetime.now(timezone.utc) - timedelta(seconds=UPLOAD_TTL_SECONDS)
        if rec is None or rec.created < cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"):
            raise NotFoundError(
                f"no upload {upload_id[:80]!r} (committed, expired or never started): "
                "start a new one"
            )
        self._may_publish(token, rec.module)
        return rec

    def upload(self, upload_id: str, token: TokenRecord | None) -> UploadState:
        """The session ``upload_id`` and the files it still lacks."""
        rec = self._open_upload(upload_id, token)
        idx = self._index(rec.index_sha256, rec.module, rec.version)
        return UploadState(rec, self._missing(idx, rec.id, token))

    def file_entry(
        self,
        upload_id: str,
        token: TokenRecord | None,
        *,
        sha256: str | None = None,
        path: str | None = None,
    ) -> FileRecord:
        """The index entry an uploaded body must match, named by sha256 or by path."""
        rec = self._open_upload(upload_id, token)
        idx = self._index(rec.index_sha256, rec.module, rec.version)
        for e in idx.files:
            if (sha256 is not None and e.sha256 == sha256) or (path is not None and e.path == path):
                return FileRecord(e.path, e.size, e.sha256)
        what = f"sha256 {sha256}" if sha256 is not None else f"path {path!r}"
        raise BadRequestError(f"{rec.module}@{rec.version}: the index lists no file with {what}")

    def has_file(self, upload_id: str, token: TokenRecord | None, entry: FileRecord) -> bool:
        """Whether upload ``upload_id`` may use the stored blob of ``entry`` without sending
        it: stored with its size, and sent by this upload or readable by ``token``. When not,
        the body must be streamed and checked (also when the blob is stored: answering
        otherwise would tell whether another tenant holds those bytes)."""
        if not self._usable({entry.sha256}, upload_id, token, None):
            return False
        return self.blobs.size(entry.sha256) == entry.size

    def file_received(self, upload_id: str, entry: FileRecord) -> None:
        """Record that upload ``upload_id`` sent ``entry``'s blob, its sha256 checked."""
        self.meta.add_upload_blob(upload_id, entry.sha256)

    def commit(
        self,
        upload_id: str,
        token: TokenRecord | None,
        h1: str | None = None,
        attestation: bytes | None = None,
        signature: bytes | None = None,
    ) -> CommitOutcome:
        """Check the upload is complete and correct, then record the version atomically,
        with ``attestation`` (its SLSA statement, :meth:`store_attestation`) and
        ``signature`` (:meth:`store_signature`) if given."""
        rec = self._open_upload(upload_id, token)
        idx = self._index(rec.index_sha256, rec.module, rec.version)
        got = idx.h1()
        if got != rec.h1 or (h1 is not None and h1 != got):
            raise BadRequestError(f"the index hashes to {got}, not {h1 or rec.h1}")
        att_sha = self.store_attestation(attestation, got) if attestation else None
        sig_sha = self.store_signature(signature, idx) if signature else None
        missing = self._missing(idx, rec.id, token)
        if missing:
            names = ", ".join(m.path for m in missing[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise BadRequestError(f"{len(missing)} files are not uploaded yet: {names}{more}")
        if self.blobs.size(rec.index_sha256) is None:  # the parsed index may be cached
            raise NotFoundError(
                f"{rec.module}@{rec.version}: the upload's index is no longer stored "
                "(collected before the upload recorded it): start a new upload"
            )
        mod = idx.entry(MOD_FILE)
        assert mod is not None
        self._check_mod(
            rec.module, rec.version, self.blobs.read(mod.sha256, self.limits.max_mod_size)
        )
        outcome = self.meta.commit_version(
            NewVersion(
                module=rec.module,
                version=rec.version,
                h1=got,
                mod_h1=dirhash.hash1([(MOD_FILE, mod.sha256)]),
                index_sha256=rec.index_sha256,
                files=[FileRecord(e.path, e.size, e.sha256) for e in idx.files],
                time=idx.time or now(),
                commit=idx.commit,
                private=rec.private,
                attestation_sha256=att_sha,
                signature_sha256=sig_sha,
            )
        )
        self.meta.delete_upload(upload_id)
        if outcome.created:
            for listener in self.on_commit:
                listener(outcome.version)
        return outcome

    def store_attestation(self, data: bytes, h1: str) -> str:
        """Store an SLSA statement whose subject is the release of ``h1``; its sha256.

        Refused (400): one over :data:`MAX_ATTESTATION` bytes, one that is no DSSE envelope
        of an in-toto SLSA provenance statement, one about other files. Its signatures are
        not checked here: whom to trust is the consumer's policy.
        """
        from wgtpm.publish._slsa import read_envelope, subject_h1

        if len(data) > MAX_ATTESTATION:
            raise BadRequestError(f"the SLSA statement is larger than {MAX_ATTESTATION} bytes")
        try:
            stmt, _, _ = read_envelope(data)
        except ValueError as exc:
            raise BadRequestError(f"the attestation is not an SLSA statement: {exc}") from exc
        if subject_h1(stmt) != h1:
            raise BadRequestError("the SLSA statement's subject is not this release's files")
        sha = hashlib.sha256(data).hexdigest()
        # written even when stored: a fresh write keeps an old unreferenced copy from being
        # collected before the commit names it (registry.gc's grace period)
        self.blobs.put(sha, [data], max_size=MAX_ATTESTATION)
        return sha

    def store_signature(self, data: bytes, idx: ReleaseIndex, *, revoked_ok: bool = False) -> str:
        """Store a model-signing bundle whose statement lists exactly ``idx``'s files; its
        sha256. Refused (400): one over :data:`MAX_SIGNATURE` bytes, one that is no such
        bundle, one over other files, one by a key :attr:`revoked` lists (unless
        ``revoked_ok``: the caching proxy keeps the upstream's, and its page says so).
        Whose key signed it is not checked here: whom to trust is the consumer's policy
        (its wgt.mod's trust lines)."""
        from wgtpm.trust._bundle import BadSignature, read_bundle

        if len(data) > MAX_SIGNATURE:
            raise BadRequestError(f"the signature is larger than {MAX_SIGNATURE} bytes")
        try:
            signed = read_bundle(data)
        except BadSignature as exc:
            raise BadRequestError(f"the signature is not a model-signing bundle: {exc}") from exc
        if signed.files != {e.path: e.sha256 for e in idx.files}:
            raise BadRequestError("the signature does not list exactly this release's files")
        revoked = self.revoked_keys().get(signed.hint) if signed.hint and not revoked_ok else None
        if revoked is not None:
            raise BadRequestError(
                f"the signature is by key sha256:{signed.hint}, which this registry's "
                f"revocation list has as {revoked.said()}; sign with a current key"
            )
        sha = hashlib.sha256(data).hexdigest()
        # written even when stored, as the SLSA statement is (registry.gc's grace period)
        self.blobs.put(sha, [data], max_size=MAX_SIGNATURE)
        return sha

    def revoked_keys(self) -> Mapping[str, Revoked]:
        """The revoked signing keys by fingerprint (:attr:`revoked`); a list that cannot be
        read counts as empty, logged (the operator's file is not a client's error)."""
        return self.revocations()[1]

    def revocations(self) -> tuple[str, Mapping[str, Revoked]]:
        """:meth:`revoked_keys` with a tag that changes whenever the list does."""
        try:
            return self.revoked.current()
        except ValueError as exc:
            log.error("revoked keys: %s", exc)
            return "unreadable", {}

    def signature(
        self, module: str, version: str, token: TokenRecord | None = None
    ) -> tuple[VersionRecord, str]:
        """The version (readable by ``token``) and the blob of its signature; 404 when it
        was published without one."""
        v = self.version(module, version, token)
        sha = self.meta.get_signature(module, v.version)
        if sha is None:
            raise NotFoundError(f"{module}@{version}: published without a signature")
        return v, sha

    def attestation(
        self, module: str, version: str, token: TokenRecord | None = None
    ) -> tuple[VersionRecord, str]:
        """The version (readable by ``token``) and the blob of its SLSA statement; 404
        when it was published without one."""
        v = self.version(module, version, token)
        sha = self.meta.get_attestation(module, v.version)
        if sha is None:
            raise NotFoundError(f"{module}@{version}: published without an SLSA statement")
        return v, sha

    @staticmethod
    def _check_mod(module: str, version: str, data: bytes) -> None:
        from wgtpm import modfile

        try:
            mf = modfile.parse(data, f"{module}@{version}/{MOD_FILE}")
        except WgtpmError as exc:
            raise BadRequestError(f"{MOD_FILE} does not parse: {exc}") from exc
        declared = mf.module.path if mf.module else None
        if declared != module:
            raise BadRequestError(f"{MOD_FILE} declares module {declared}, not {module}")
