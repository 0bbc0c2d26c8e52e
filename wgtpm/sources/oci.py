"""Modules from an OCI registry: ``WGTPROXY=oci://REGISTRY/NAMESPACE``, and ``direct`` for
module paths that ``WGTOCI`` names (docs/guides/oci.md).

A version is the image manifest tagged with it (:mod:`wgtpm.oci.naming`):

* ``versions`` lists the repository's tags that are semantic versions;
  ``latest`` is the highest release among them (a pre-release when there is
  none); another query names a tag, and resolves to the version whose tag
  points at the same manifest;
* ``.info`` has the manifest's ``org.opencontainers.image.created`` as its time;
* ``.mod`` is the layer titled ``wgt.mod`` (``module PATH`` when there is none);
* the index is the layer of media type ``application/vnd.wgtpm.index.v1+json``,
  checked against the manifest (each file a layer of the same digest and size);
  an artifact that has none (pushed by ``oras push``, KitOps, a ModelPack tool)
  gets one synthesised from its layers' names, digests and sizes;
* a file is the blob whose digest is the file's sha256, downloaded by the
  fetcher like any source's file (streamed, resumed with ``Range``, checked
  against the index that wgt.sum locks, kept only when right). Its request
  carries the registry's ``Authorization`` for the registry's origin only.

The source never verifies hashes against wgt.sum and never writes the cache:
:mod:`wgtpm.modfetch` does, as for every source.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .. import index as _index
from .. import version as _version
from .._errors import FetchError, NotFoundError, UsageError, WgtpmError
from ..oci import manifest as ocim
from ..oci.naming import check_namespace, repository, repository_element, tag_of, version_of_tag
from ..query import check_query
from ._base import FileRequest, RevInfo, Source
from ._hosted import (
    parse_time,
    rfc3339,
    sha256_check,
    synthesise_index,
    tag_version,
    verified_get,
)
from .direct import read_optional

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ..index import IndexEntry
    from ..oci.auth import Credentials, Keychain
    from ..oci.client import OciClient

__all__ = ["OciDirect", "OciSource", "parse_oci_url", "parse_wgtoci", "plain_http_for"]

#: At most this many tags are compared when a non-version query names a tag.
MAX_TAG_LOOKUPS = 100


def parse_oci_url(url: str) -> tuple[str, str]:
    """``oci://HOST[:PORT]/NAMESPACE`` -> (``HOST[:PORT]``, ``NAMESPACE``)."""
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise UsageError(f"{url!r}: not a valid oci:// URL ({exc})") from None
    if u.scheme != "oci" or not u.hostname:
        raise UsageError(f"{url!r}: want oci://HOST[:PORT]/NAMESPACE")
    if u.username or u.password:
        raise UsageError(
            "oci:// URLs carry no credentials: wgtpm reads them from Docker's config.json, "
            "a credential helper or ~/.netrc (docs/guides/oci.md)"
        )
    if u.query or u.fragment:
        raise UsageError(f"{url!r}: an oci:// URL has no query or fragment")
    return u.netloc.lower(), check_namespace(u.path, url)


def _created(man: ocim.Manifest) -> str | None:
    """The manifest's ``org.opencontainers.image.created`` as RFC 3339 UTC, if it is a time."""
    value = man.annotations.get(ocim.CREATED)
    if not value:
        return None
    try:
        return rfc3339(parse_time(value))
    except ValueError:
        return None  # another tool's free text: no time rather than a wrong one


class OciSource:
    """One registry (``registry`` is ``HOST[:PORT]``) holding modules under ``namespace``.

    With ``direct``, the module path's first element is the registry's name and the
    repository is the rest of the path (``oci.acme.internal/models/xor`` ->
    ``models/xor``); else the repository is :func:`~wgtpm.oci.naming.repository` of
    ``namespace`` and the whole path. ``plain_http`` and ``auth`` are
    :class:`~wgtpm.oci.client.OciClient`'s.
    """

    def __init__(
        self,
        http: HttpClient,
        registry: str,
        namespace: str = "",
        *,
        direct: bool = False,
        plain_http: bool | None = None,
        auth: Credentials | Keychain | None = None,
    ) -> None:
        from ..oci.client import OciClient

        self.client: OciClient = OciClient(http, registry, plain_http=plain_http, auth=auth)
        self.http = http
        self.namespace = namespace
        self.direct = direct
        self.name = f"oci://{self.client.registry}" + (f"/{namespace}" if namespace else "")
        self._lock = threading.Lock()
        # (path, version) -> (manifest, its digest): a process reads each manifest once
        self._manifests: dict[tuple[str, str], tuple[ocim.Manifest, str]] = {}

    @classmethod
    def from_url(cls, url: str, http: HttpClient, *, insecure_patterns: str = "") -> OciSource:
        """The source ``WGTPROXY``'s ``oci://HOST[:PORT]/NAMESPACE`` entry names
        (``insecure_patterns``: ``WGTOCI_INSECURE``, see :func:`plain_http_for`)."""
        registry, namespace = parse_oci_url(url)
        return cls(
            http, registry, namespace, plain_http=plain_http_for(insecure_patterns, registry)
        )

    # ---- names ------------------------------------------------------------------

    def repository(self, path: str) -> str:
        """The repository of module ``path`` in this registry."""
        if self.direct:
            elems = path.split("/")[1:]
            if not elems:
                raise NotFoundError(path, None, f"{self.name}: a module path names a repository")
            return "/".join(repository_element(e) for e in elems)
        return repository(self.namespace, path)

    def _where(self, path: str) -> str:
        return f"{self.client.registry}/{self.repository(path)}"

    @contextmanager
    def _translated(self, path: str, version: str | None, what: str) -> Iterator[None]:
        """Registry and transport errors as the module's :class:`NotFoundError` or
        :class:`FetchError` (``from`` the cause)."""
        from ..oci.client import OciNotFoundError

        try:
            yield
        except OciNotFoundError as exc:
            raise NotFoundError(path, version, f"{what}: {exc}") from exc
        except ocim.ManifestError as exc:
            raise FetchError(path, version, f"{what} in {self._where(path)}: {exc}") from exc
        except (NotFoundError, FetchError):
            raise
        except WgtpmError as exc:
            raise FetchError(path, version, f"{what}: {exc}") from exc

    # ---- manifests ------------------------------------------------------------

    def _manifest(self, path: str, version: str) -> tuple[ocim.Manifest, str]:
        key = (path, version)
        with self._lock:
            known = self._manifests.get(key)
        if known is not None:
            return known
        repo = self.repository(path)
        with self._translated(path, version, "the manifest"):
            got = self.client.manifest(repo, tag_of(version))
            man = ocim.parse(got.data, got.media_type)
        with self._lock:
            return self._manifests.setdefault(key, (man, got.digest))

    def _blob(self, path: str, version: str, desc: ocim.Descriptor, what: str) -> bytes:
        """A small blob (wgt.mod, the index), checked against its descriptor."""
        from ..httpclient import MAX_METADATA

        if desc.size > MAX_METADATA:
            raise FetchError(
                path,
                version,
                f"the manifest in {self._where(path)} states {desc.size} bytes for {what}, "
                f"more than the {MAX_METADATA} bytes allowed for it; refusing it",
            )
        repo = self.repository(path)
        with self._translated(path, version, what):
            headers = self.client.authorization(repo)
        return verified_get(
            self.http,
            self.client.blob_url(repo, desc.digest),
            headers,
            sha256_check(desc.size, desc.sha256),
            path=path,
            version=version,
            what=f"{what} ({desc.digest[:19]}...) from {self._where(path)}",
            limit=desc.size,
        )

    # ---- the Source protocol ----------------------------------------------------

    def versions(self, path: str) -> list[str]:
        repo = self.repository(path)
        with self._translated(path, None, "listing versions"):
            tags = self.client.tags(repo)
        out = []
        for t in tags:
            v = tag_version(path, version_of_tag(t))
            if v is not None and tag_of(v) == t:
                out.append(v)
        return out

    def info(self, path: str, query: str) -> RevInfo:
        why = check_query(query)
        if why is not None:
            raise UsageError(f"{path}@{query[:80]}: invalid version query: {why}")
        if query == "latest":
            versions = self.versions(path)
            releases = [v for v in versions if not _version.is_prerelease(v)]
            pool = releases or versions
            if not pool:
                raise NotFoundError(
                    path, "latest", f"no tags of the form vX.Y.Z in {self._where(path)}"
                )
            return self.info(path, _version.sort_versions(pool)[-1])
        if not _version.is_valid(query):
            return self._from_tag(path, query)
        man, _digest = self._manifest(path, query)
        revision = man.annotations.get(ocim.REVISION)
        return RevInfo(
            query, _created(man), revision if revision and _index.is_commit(revision) else None
        )

    def _from_tag(self, path: str, tag: str) -> RevInfo:
        """A tag that is not a version (``stable``): the version whose tag names the same
        manifest, the highest when several do."""
        repo = self.repository(path)
        with self._translated(path, tag, f"tag {tag}"):
            want = self.client.manifest(repo, tag).digest
        candidates = _version.sort_versions(self.versions(path))[::-1][:MAX_TAG_LOOKUPS]
        for v in candidates:
            if self._manifest(path, v)[1] == want:
                return self.info(path, v)
        raise NotFoundError(
            path,
            tag,
            f"tag {tag} of {self._where(path)} names no manifest that a version tag names "
            f"(of the newest {MAX_TAG_LOOKUPS})",
        )

    def mod(self, path: str, version: str) -> bytes:
        man, _ = self._manifest(path, version)
        layer = man.by_title.get("wgt.mod")
        if layer is None:
            return _index.synthetic_mod(path)
        return self._blob(path, version, layer, "wgt.mod")

    def index(self, path: str, version: str) -> bytes:
        man, digest = self._manifest(path, version)
        layer = man.index_layer
        if layer is None:
            with self._translated(path, version, "the artifact's layers"):
                files = ocim.synthesised_files(man)
            return synthesise_index(
                path,
                version,
                files,
                time=_created(man),
                build={"synthesised": "oci artifact layers", "manifest": digest},
            )
        data = self._blob(path, version, layer, "the index")
        idx = _index.parse(data, path, version)
        for e in idx.files:
            have = man.layer_for(e.sha256)
            if have is None or have.size != e.size:
                stated = "no layer" if have is None else f"a layer of {have.size} bytes"
                raise FetchError(
                    path,
                    version,
                    f"{e.path}: the index lists {e.size} bytes with sha256 {e.sha256}, but the "
                    f"manifest {digest} in {self._where(path)} has {stated} of that digest; "
                    "the artifact is inconsistent, refusing it",
                )
        return data

    def file(self, path: str, version: str, name: str) -> FileRequest:
        man, _ = self._manifest(path, version)
        layer = man.by_title.get(name)
        if layer is None:
            raise NotFoundError(
                path, version, f"{name}: no layer of that name in {self._where(path)}"
            )
        repo = self.repository(path)
        with self._translated(path, version, name):
            headers = self.client.authorization(repo)
        return FileRequest(self.client.blob_url(repo, layer.digest), headers)

    def refresh(self, path: str, version: str, name: str, stale: FileRequest) -> FileRequest:
        """``name``'s request again, for a download the registry answered 401 although
        ``stale`` (an earlier :meth:`file`) carried a token: that token is forgotten and a
        fresh one fetched. A registry token lives minutes; a download cut and resumed after
        that is refused with the old one; the downloader asks for this on such a 401
        (``modfetch._transfer.Fresh``) and resumes from what it has."""
        held = stale.headers.get("Authorization")
        if held:
            self.client.auth.forget(held)
        return self.file(path, version, name)

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        return ()  # the index is one small blob away, or made from the manifest at once

    def signature(self, path: str, version: str) -> bytes:
        """The release's signature (``@v/$version.sig``): the referrer of the version's
        manifest of type :data:`wgtpm.oci.push.SIGNATURE_TYPE`; :class:`NotFoundError`
        when it has none."""
        from ..oci.push import SIGNATURE_TYPE

        return self._attached(path, version, SIGNATURE_TYPE, "signature")

    def attestation(self, path: str, version: str) -> bytes:
        """The build's SLSA statement (``@v/$version.slsa.json``): the referrer of type
        :data:`wgtpm.oci.push.STATEMENT_TYPE`; :class:`NotFoundError` when it has none."""
        from ..oci.push import STATEMENT_TYPE

        return self._attached(path, version, STATEMENT_TYPE, "SLSA statement")

    def _attached(self, path: str, version: str, artifact_type: str, what: str) -> bytes:
        from ..oci.push import read_attachment

        _, digest = self._manifest(path, version)
        with self._translated(path, version, what):
            data = read_attachment(self.client, self.repository(path), digest, artifact_type)
        if data is None:
            raise NotFoundError(
                path, version, f"no {what} is attached to {digest} in {self._where(path)}"
            )
        return data


# ---- WGTOCI: module paths that name an OCI registry, fetched 'direct' ------------------


def parse_wgtoci(value: str) -> list[tuple[str, str | None]]:
    """``WGTOCI``: comma-separated ``PATTERN`` or ``PATTERN=REGISTRY`` -> (pattern, registry).

    ``PATTERN`` is a module path glob as in ``WGTPRIVATE`` (``oci.acme.internal``,
    ``*.registry.example``); a matching path's first element is the registry, or
    ``REGISTRY`` (``HOST[:PORT]``) when given: a registry on a port a module path cannot
    name, or another address of the same one.
    """
    out: list[tuple[str, str | None]] = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        pattern, sep, registry = item.partition("=")
        pattern, registry = pattern.strip().rstrip("/"), registry.strip()
        if not pattern or (sep and not registry):
            raise UsageError(f"WGTOCI={value!r}: {item!r} is not PATTERN or PATTERN=HOST[:PORT]")
        if sep:
            try:
                u = urlsplit("//" + registry)
                u.port  # noqa: B018 - raises on a malformed port
            except ValueError as exc:
                raise UsageError(f"WGTOCI={value!r}: {registry!r}: {exc}") from None
            if not u.hostname or u.path or u.username or u.query:
                raise UsageError(f"WGTOCI={value!r}: {registry!r} is not HOST[:PORT]")
        out.append((pattern, registry.lower() if sep else None))
    return out


def plain_http_for(patterns: str, registry: str) -> bool | None:
    """``plain_http`` for :class:`~wgtpm.oci.client.OciClient`: ``True`` when
    ``WGTOCI_INSECURE`` (comma-separated globs of ``HOST[:PORT]``) lets ``registry`` be
    spoken to over plain HTTP, else ``None`` (the client's default: loopback only)."""
    import fnmatch

    names = (p.strip().lower() for p in patterns.split(","))
    return True if any(fnmatch.fnmatchcase(registry, p) for p in names if p) else None


class OciDirect:
    """``direct`` for module paths that ``WGTOCI`` names (their OCI registry), and ``inner``
    (the hosted sources: GitHub, Hugging Face, the PAW hub) for every other path."""

    name = "direct"

    def __init__(
        self,
        inner: Source,
        wgtoci: str,
        http: Callable[[], HttpClient],
        *,
        insecure_patterns: str = "",
    ) -> None:
        self.inner = inner
        self.entries = parse_wgtoci(wgtoci)
        self._http = http
        self._insecure = insecure_patterns
        self._lock = threading.Lock()
        self._sources: dict[str, OciSource] = {}

    def source_for(self, path: str) -> Source:
        from ..module import match_patterns

        for pattern, registry in self.entries:
            if match_patterns(pattern, path):
                reg = registry or path.split("/", 1)[0]
                with self._lock:
                    src = self._sources.get(reg)
                    if src is None:
                        src = self._sources[reg] = OciSource(
                            self._http(),
                            reg,
                            direct=True,
                            plain_http=plain_http_for(self._insecure, reg),
                        )
                return src
        return self.inner

    def versions(self, path: str) -> list[str]:
        return self.source_for(path).versions(path)

    def info(self, path: str, query: str) -> RevInfo:
        return self.source_for(path).info(path, query)

    def mod(self, path: str, version: str) -> bytes:
        return self.source_for(path).mod(path, version)

    def index(self, path: str, version: str) -> bytes:
        return self.source_for(path).index(path, version)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        return self.source_for(path).file(path, version, name)

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        return self.source_for(path).known_files(path, version)

    def refresh(self, path: str, version: str, name: str, stale: FileRequest) -> FileRequest:
        """:meth:`OciSource.refresh` for a path ``WGTOCI`` names; :meth:`file` again for
        any other (its host's credentials do not expire mid-command)."""
        src = self.source_for(path)
        again = getattr(src, "refresh", None)
        if again is None:
            return src.file(path, version, name)
        req: FileRequest = again(path, version, name, stale)
        return req

    def signature(self, path: str, version: str) -> bytes:
        return read_optional(self.source_for(path), "signature", path, version, "signatures")

    def attestation(self, path: str, version: str) -> bytes:
        return read_optional(self.source_for(path), "attestation", path, version, "SLSA statements")
