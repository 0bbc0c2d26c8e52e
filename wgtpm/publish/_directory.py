"""The directory target: a release written into a ``file://`` proxy tree (``--dry-run``, ``-o DIR``).

``wgtpm publish --dry-run`` writes ``dist/``, ``-o DIR`` writes DIR; either is
a valid proxy tree (:class:`~wgtpm.proxytree.ProxyTree`), so that::

    WGTPROXY=file://$PWD/dist wgtpm get example.com/acme/xor@v0.1.0

gets the release exactly as a registry would serve it. Nothing leaves the machine.
The release's SLSA statement (:mod:`._slsa`) is written beside its index, as
``$module/@v/$version.slsa.json``, and its signature (``--sign-key``;
:mod:`wgtpm.trust`) as ``$module/@v/$version.sig``, when the version is new (a
re-publish of the same h1 leaves the first build's statement and signature).

``real`` is the target a publish without ``--dry-run`` would use (``--to
URL``, or the GitHub or Hugging Face repository of the module path), or
``None`` when there is none: ``wgtpm publish`` reads the versions published
there too, so that a dry run refuses what the publish would refuse.
"""

from __future__ import annotations

from pathlib import Path

from .._fs import write_atomic
from .._report import Reporter
from ..module import escape_path, escape_version
from ..proxytree import ProxyTree
from ._target import Published, PublishTarget, Release

__all__ = ["DirectoryTarget"]


class DirectoryTarget:
    """A :class:`~wgtpm.publish.PublishTarget` that writes a proxy tree rooted at ``root``."""

    def __init__(self, root: Path, real: PublishTarget | None = None) -> None:
        self.tree = ProxyTree(Path(root).absolute())
        self.real = real

    @property
    def name(self) -> str:
        return f"directory {self.tree.root}"

    def ready(self) -> None:
        pass  # nothing to sign in to

    def published_versions(self, module: str) -> list[str]:
        return self.tree.versions(module)

    def check(self, release: Release) -> None:
        pass  # any module may be written into a directory

    def publish(self, release: Release, reporter: Reporter) -> Published:
        created = self.tree.put(release.module, release.version, release.index, release.files)
        if created and release.attestation:
            write_atomic(self.statement_path(release.module, release.version), release.attestation)
        if created and release.signature:
            write_atomic(self.signature_path(release.module, release.version), release.signature)
        return Published(self.tree.url, created)

    def statement_path(self, module: str, version: str) -> Path:
        """Where the SLSA statement of ``module@version`` lies in the tree."""
        vdir = self.tree.root / escape_path(module) / "@v"
        return vdir / f"{escape_version(version)}.slsa.json"

    def signature_path(self, module: str, version: str) -> Path:
        """Where the signature (model-signing bundle) of ``module@version`` lies in the tree."""
        vdir = self.tree.root / escape_path(module) / "@v"
        return vdir / f"{escape_version(version)}.sig"
