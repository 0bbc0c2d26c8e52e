"""Publishing a module version to an OCI registry: ``wgtpm publish --to oci://REGISTRY/NAMESPACE``.

What consumers read back is :mod:`wgtpm.sources.oci`: in the repository
:func:`wgtpm.oci.naming.repository` names for the module within NAMESPACE,
the tag of the version (:func:`wgtpm.oci.naming.tag_of`) naming the image
manifest :func:`wgtpm.oci.manifest.build` makes of the release's index (one
layer per file, the index a layer too), and attached to that manifest as
referrers (:mod:`wgtpm.oci.push`) the release's signature
(:data:`~wgtpm.oci.push.SIGNATURE_TYPE`) and the build's SLSA statement
(:data:`~wgtpm.oci.push.STATEMENT_TYPE`).

The flow, all or nothing
------------------------
1. **check**: the tag is free, or names exactly the manifest this release
   makes (then the publish is a no-op); a tag naming another manifest is
   refused, naming both h1s: a published version never changes.
2. **blobs**: every file of the index, the index, the config, four at a time;
   each sent only when the repository lacks it, mounted from the repository of
   one of the build's dependencies in the same namespace when that has it.
3. **the manifest**, by its digest: in the registry, but named by no tag.
4. **the referrers**: the signature and the SLSA statement, each a
   manifest whose ``subject`` is the release's (the first of each type
   stays: a re-publish of the same bytes keeps the first build's statement).
5. **the tag**, last: only now does the version exist for consumers, and its
   signature was there before it.

A push that fails before the tag leaves no version: at most blobs, an
untagged manifest and its referrers, which nothing names by a tag, so no
consumer sees them; the next publish finds them there and sends nothing
again, and the registry's own garbage collection removes what no tag
reaches if the version is never published. A tag that appeared between the
check and the end (another publisher) is checked once more before tagging.

Credentials and plain HTTP are the OCI client's (:mod:`wgtpm.oci.client`,
:mod:`wgtpm.oci.auth`), as for the source: Docker's ``config.json`` and
credential helpers, ``~/.netrc``; HTTPS except for a loopback registry or one
``WGTOCI_INSECURE`` names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import index as _index
from .. import version as _version
from .._errors import ModuleError, UsageError, WgtpmError
from .._report import Reporter
from ..httpclient import redact
from ..oci import naming
from ..oci.push import (
    SIGNATURE_TYPE,
    STATEMENT_TYPE,
    Blob,
    Pusher,
    PushError,
    sha256_digest,
)
from ._target import Published, Release

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ..oci.client import OciClient
    from ..oci.manifest import Built

__all__ = ["OciTarget"]

#: The most dependencies' repositories asked for a blob before it is uploaded instead.
MOUNT_CANDIDATES = 8
#: Blobs pushed at once (each its own HEAD, POST and PUT or PATCHes).
PUSHES_AT_ONCE = 4
#: Blobs smaller than this are uploaded rather than looked for elsewhere to mount.
MOUNT_FROM_SIZE = 1 << 20


class OciTarget:
    """A :class:`~wgtpm.publish.PublishTarget` over the namespace of an OCI registry
    (see the module docstring)."""

    def __init__(
        self,
        url: str,
        http: HttpClient,
        environ: Mapping[str, str],
        *,
        client: OciClient | None = None,
        direct: bool = False,
    ) -> None:
        """``url`` is ``oci://HOST[:PORT]/NAMESPACE``; ``http`` is the caller's, who closes it.
        ``client``: the OCI client to use (tests); else one over ``http`` with the
        credentials ``environ`` leads to. ``direct``: the module path names the registry
        (``WGTOCI``), so its repository is the rest of the path, as the source reads it."""
        from ..oci.auth import Keychain
        from ..oci.client import OciClient
        from ..sources.oci import parse_oci_url, plain_http_for

        self.url = url.rstrip("/")
        self.direct = direct
        self.registry, self.namespace = parse_oci_url(self.url)
        plain = plain_http_for(environ.get("WGTOCI_INSECURE", ""), self.registry)
        self.client = client or OciClient(
            http, self.registry, plain_http=plain, auth=Keychain(environ)
        )

    @property
    def name(self) -> str:
        return f"OCI registry {self.url}"

    def repository(self, module: str) -> str:
        if self.direct:  # as wgtpm.sources.oci.OciSource(direct=True) names it
            return "/".join(naming.repository_element(e) for e in module.split("/")[1:])
        return naming.repository(self.namespace, module)

    def ready(self) -> None:
        pass  # a registry may take anonymous pushes; a refusal names what to set

    def published_versions(self, module: str) -> list[str]:
        from ..oci.client import OciNotFoundError

        try:
            tags = self.client.tags(self.repository(module))
        except OciNotFoundError:
            return []  # no repository yet: nothing published
        except WgtpmError as exc:
            raise ModuleError(module, None, f"cannot list tags at {self.name}: {exc}") from exc
        versions = [naming.version_of_tag(t) for t in tags]
        return _version.sort_versions([v for v in versions if v and _version.is_valid(v)])

    def check(self, release: Release) -> None:
        self._existing(release, Pusher(self.client, self.repository(release.module)))

    def publish(self, release: Release, reporter: Reporter) -> Published:
        from ..oci import manifest as _manifest

        repo = self.repository(release.module)
        tag = naming.tag_of(release.version)
        pusher = Pusher(self.client, repo)
        built = _manifest.build(
            _index.parse(release.index, release.module, release.version), release.index
        )
        digest = sha256_digest(built.manifest)
        where = f"{self.registry}/{repo}:{tag}"
        try:
            if self._existing(release, pusher, digest) is not None:
                reporter.notice(f"{release.module}@{release.version} is already at {where}")
                return Published(where, False)
            self._push_blobs(pusher, self._blobs(release, built), release, repo, reporter)
            pusher.put_manifest(digest, built.manifest, _manifest.MANIFEST_TYPE)
            subject = {
                "mediaType": _manifest.MANIFEST_TYPE,
                "digest": digest,
                "size": len(built.manifest),
            }
            if release.signature:
                pusher.attach(subject, SIGNATURE_TYPE, release.signature, "wgt.sig")
            if release.attestation:
                pusher.attach(
                    subject,
                    STATEMENT_TYPE,
                    release.attestation,
                    "wgt.slsa.json",
                    {"in-toto.io/predicate-type": "https://slsa.dev/provenance/v1"},
                )
            if self._existing(release, pusher, digest) is not None:  # tagged meanwhile
                return Published(where, False)
            pusher.put_manifest(tag, built.manifest, _manifest.MANIFEST_TYPE)
        except PushError as exc:
            raise ModuleError(
                release.module,
                release.version,
                redact(
                    f"publishing to {self.name} failed: {exc}; no tag was pushed, so nothing "
                    "is published (what went up is reused by the next attempt)"
                ),
            ) from exc
        return Published(where, True)

    def _push_blobs(
        self, pusher: Pusher, blobs: list[Blob], release: Release, repo: str, reporter: Reporter
    ) -> None:
        """Push ``blobs``, :data:`PUSHES_AT_ONCE` at a time; progress is said from this
        thread as each is done. The first failure (or Ctrl-C) cancels those not started and
        waits for those under way."""
        from concurrent.futures import ThreadPoolExecutor, as_completed

        mounts = self._mount_candidates(release, repo)
        with ThreadPoolExecutor(min(PUSHES_AT_ONCE, len(blobs))) as pool:
            futures = {
                pool.submit(pusher.push_blob, b, mounts if b.size >= MOUNT_FROM_SIZE else ()): b
                for b in blobs
            }
            try:
                for i, done in enumerate(as_completed(futures), 1):
                    what, blob = done.result(), futures[done]
                    if what != "present":
                        reporter.notice(f"{what} blob {i}/{len(blobs)} ({blob.size} bytes)")
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _existing(self, release: Release, pusher: Pusher, digest: str | None = None) -> str | None:
        """The digest of the manifest the version's tag names (``None``: no tag). Another
        manifest than the release's (``digest``, computed when not given) is refused,
        naming its h1 and ours."""
        from ..oci import manifest as _manifest

        if digest is None:
            built = _manifest.build(
                _index.parse(release.index, release.module, release.version), release.index
            )
            digest = sha256_digest(built.manifest)
        tag = naming.tag_of(release.version)
        try:
            got = pusher.get_manifest(tag)
        except PushError as exc:
            raise ModuleError(
                release.module, release.version, f"cannot read tag {tag} at {self.name}: {exc}"
            ) from exc
        if got is None:
            return None
        if sha256_digest(got[0]) == digest:
            return digest
        theirs = self._h1_of(release, pusher, got[0])
        raise ModuleError(
            release.module,
            release.version,
            f"{self.name} has {release.version} already as another release ({theirs}; this "
            f"build is {release.h1}): a published version never changes; publish a new version",
        )

    def _h1_of(self, release: Release, pusher: Pusher, body: bytes) -> str:
        """The h1 of the release the manifest ``body`` is, or what it is instead."""
        from ..oci import manifest as _manifest

        try:
            m = _manifest.parse(body)
        except _manifest.ManifestError as exc:
            return f"a manifest wgtpm cannot read: {exc}"
        layer = m.index_layer
        if layer is None:
            return "an artifact without a wgtpm index"
        try:
            data = pusher.get_blob(layer.digest, layer.size)
            return _index.parse(data, release.module, release.version).h1()
        except (PushError, ModuleError) as exc:
            return f"its index unreadable: {exc}"

    def _blobs(self, release: Release, built: Built) -> list[Blob]:
        """The blobs of the release's manifest: every file, the index, the config."""
        shas = {e["path"]: e for e in json.loads(release.index)["files"]}
        out = [
            Blob("sha256:" + shas[p]["sha256"], int(shas[p]["size"]), path=f)
            for p, f in sorted(release.files.items())
        ]
        out.append(Blob.of(release.index))
        out.append(Blob.of(built.config))
        return out

    def _mount_candidates(self, release: Release, repo: str) -> list[str]:
        """Repositories of this namespace that may hold some of the release's blobs: those
        of the modules the build depended on (its SLSA statement's resolved dependencies)."""
        if not release.attestation:
            return []
        from ._slsa import read_envelope

        try:
            stmt, _, _ = read_envelope(release.attestation)
        except ValueError:
            return []
        deps = stmt.get("predicate", {}).get("buildDefinition", {}).get("resolvedDependencies", [])
        out: list[str] = []
        for dep in deps if isinstance(deps, list) else []:
            uri = dep.get("uri") if isinstance(dep, dict) else None
            if not isinstance(uri, str) or not uri.startswith("wgt:"):
                continue
            module = uri[4:].rsplit("@", 1)[0]
            if self.direct and module.split("/", 1)[0] != release.module.split("/", 1)[0]:
                continue  # a module of another host is in no repository of this registry
            try:
                name = self.repository(module)
            except UsageError:
                continue
            if name != repo and name not in out:
                out.append(name)
        return out[:MOUNT_CANDIDATES]
