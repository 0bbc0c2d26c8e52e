"""The ``file`` kind: a source shipped verbatim, under its own path.

``artifact vocab data/vocab.json`` builds ``build/data/vocab.json`` (a copy,
written atomically) and publishes ``data/vocab.json``.
"""

from __future__ import annotations

from pathlib import Path

from .._fs import write_atomic
from .._report import Reporter
from ..deps import ModuleResolver
from ..kinds import FILE, kind_of_source
from ._builder import BuildResult, Target

__all__ = ["FileBuilder"]


class FileBuilder:
    """Ships a file as it is."""

    kind = FILE

    def claims(self, source: str) -> bool:
        return kind_of_source(source) == FILE

    def build(self, target: Target, resolver: ModuleResolver, reporter: Reporter) -> BuildResult:
        data = target.read_source()
        dest = target.out_dir / target.source
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, data)
        return BuildResult(
            FILE,
            f"copied {target.source} to {target.shown(dest)}",
            {target.source: target.project_dir / target.source},
        )

    def outputs(self, target: Target) -> dict[str, Path] | None:
        source = target.project_dir / target.source
        return {target.source: source} if source.is_file() else None

    def find(self, base: Path, name: str) -> Path | None:
        candidate = base / name
        return candidate if candidate.is_file() and kind_of_source(name) == FILE else None
