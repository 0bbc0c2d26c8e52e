"""The ``file`` kind: a source shipped verbatim, under its own path.

``artifact vocab data/vocab.json`` builds ``build/data/vocab.json`` (a copy,
streamed in :data:`BLOCK` reads and renamed into place) and publishes
``data/vocab.json``. The build reads the source once: what a publish hashes
and ships is the copy it made (:attr:`BuildResult.outputs`), so a source that
reads differently each time (a link into ``/proc``) cannot ship other bytes
than were built; and a source that is a link out of the package, or not a
regular file, is refused before it is read (:meth:`Target.source_path`).
After a ``wgtpm build``, :meth:`FileBuilder.outputs` names the
source, which the copy equals.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._errors import BuildError
from .._fs import temp_dir
from .._report import Reporter
from ..artifacts import find_built
from ..deps import ModuleResolver
from ..kinds import FILE, kind_of_source
from ._builder import BuildResult, Target

__all__ = ["BLOCK", "FileBuilder"]

#: Bytes per read of the copy: memory stays flat whatever the file's size.
BLOCK = 1 << 20


class FileBuilder:
    """Ships a file as it is."""

    kind = FILE

    def claims(self, source: str) -> bool:
        return kind_of_source(source) == FILE

    def build(self, target: Target, resolver: ModuleResolver, reporter: Reporter) -> BuildResult:
        dest = target.out_dir / target.source
        path = target.source_path()  # a link out of the package is refused, not copied
        try:
            src = open(path, "rb")
        except OSError as exc:
            raise BuildError(
                f"artifact {target.name}: cannot read {target.source} ({exc.strerror})"
            ) from exc
        with src, temp_dir(dest) as tmp:
            part = tmp / dest.name
            with open(part, "wb") as out:
                shutil.copyfileobj(src, out, BLOCK)
                out.flush()
                os.fsync(out.fileno())
            os.replace(part, dest)
        return BuildResult(
            FILE, f"copied {target.source} to {target.shown(dest)}", {target.source: dest}
        )

    def outputs(self, target: Target) -> dict[str, Path] | None:
        source = target.project_dir / target.source
        return {target.source: source} if source.is_file() else None

    def find(self, base: Path, name: str) -> Path | None:
        return find_built(FILE, base, name)
