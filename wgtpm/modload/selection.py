"""What the main module's ``select`` lines take of each module: file globs, and
``FILE#TENSOR`` items read by range where tables say where the tensors lie.

Each function takes the :class:`~wgtpm.modload.project.Project`; its answers about
tables are kept in ``project.ranged_known`` for the project's life.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..modfile._stmts import TENSOR_TABLES
from ..module import ModuleVersion
from .buildlist import Fetched

if TYPE_CHECKING:
    from ..tensors import TensorInfo
    from .project import Project

__all__ = ["fetch_tensors", "patterns", "ranged"]

MV = ModuleVersion


def patterns(project: Project, m: MV) -> list[str] | None:
    """The main module's ``select`` globs for ``m`` (``None``: every file is wanted).

    A ``FILE#TENSOR`` item adds the release's ``wgt.tensors.json`` (the tensors come
    by range: :func:`fetch_tensors`), or FILE itself, whole, when no tables say where
    its tensors lie: the release locks none, and no checksum database logged any
    (:func:`ranged`).
    """
    modfile = project.modfile
    pats = modfile.select_patterns(m.path)
    tensors = modfile.select_tensors(m.path)
    if pats is None or not tensors:
        return pats
    origin = project.origin(m)
    if isinstance(origin, Fetched) and not ranged(project, origin):
        pats = pats + sorted({f for f, _ in tensors})
    return pats


def ranged(project: Project, origin: Fetched) -> bool:
    """Whether tables say where the tensors of ``origin``'s files lie, so that
    ``select FILE#TENSOR`` reads them by range: the release's own (h1-locked), or ones
    a checksum database logged (:func:`wgtpm.tensors.logged_tables`, fetched, proven
    and kept in the cache the first time)."""
    key = (origin.path, origin.version)
    known = project.ranged_known
    if key not in known:
        idx = project.index(origin)
        if idx.entry(TENSOR_TABLES) is not None:
            known[key] = True
        elif not project.ranged_by_log:
            known[key] = False
        else:
            from ..tensors import logged_tables

            known[key] = logged_tables(project.fetcher(), idx) is not None
    return known[key]


def fetch_tensors(project: Project, m: MV) -> list[tuple[str, TensorInfo, bytes]]:
    """Fetch the tensors that ``select MODULE FILE#TENSOR`` lines name into the cache, by
    range and verified (:func:`wgtpm.rangeread.fetch_selected`; ``(FILE, tensor,
    bytes)`` each); none without such lines, or when FILE came whole (no tables)."""
    tensors = project.modfile.select_tensors(m.path)
    origin = project.origin(m)
    if not tensors or not isinstance(origin, Fetched) or not ranged(project, origin):
        return []
    from ..rangeread import fetch_selected

    return fetch_selected(project.fetcher(), origin.path, origin.version, tensors)
