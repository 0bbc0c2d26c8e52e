"""The directory target: a release written into a ``file://`` proxy tree (``--dry-run``, ``-o DIR``).

``wgtpm publish --dry-run`` writes ``dist/``, ``-o DIR`` writes DIR; either is
a valid proxy tree (:class:`~wgtpm.proxytree.ProxyTree`), so that::

    WGTPROXY=file://$PWD/dist wgtpm get example.com/acme/xor@v0.1.0

gets the release exactly as a registry would serve it. Nothing leaves the machine.

``real`` is the target a publish without ``--dry-run`` would use (``--to
URL``, or the GitHub or Hugging Face repository of the module path), or
``None`` when there is none: ``wgtpm publish`` reads the versions published
there too, so that a dry run refuses what the publish would refuse.
"""

from __future__ import annotations

from pathlib import Path

from .._report import Reporter
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
        return Published(self.tree.url, created)
