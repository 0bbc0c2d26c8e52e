"""The registry: one builder per artifact kind, chosen by the source's kind.

>>> builder_for_source("model.wgt").kind, builder_for_source("data/vocab.json").kind
('wgt', 'file')
"""

from __future__ import annotations

from .._report import SILENT, Reporter
from ..deps import ModuleResolver
from ..kinds import KINDS, check_kind, kind_of_source
from ._builder import Builder, BuildResult, Target
from ._file import FileBuilder
from ._paw import PawBuilder
from ._wgt import WgtBuilder

__all__ = ["build_artifact", "builder_for_kind", "builder_for_source", "builders"]

_BUILDERS: dict[str, Builder] = {b.kind: b for b in (WgtBuilder(), PawBuilder(), FileBuilder())}
assert tuple(_BUILDERS) == KINDS, "one builder per kind of wgtpm.kinds, in its order"


def builders() -> tuple[Builder, ...]:
    """Every builder, in the order of :data:`wgtpm.kinds.KINDS`."""
    return tuple(_BUILDERS.values())


def builder_for_kind(kind: str) -> Builder:
    """The builder of ``kind`` (the ``kind`` of an index entry); :class:`UsageError` if unknown."""
    return _BUILDERS[check_kind(kind)]


def builder_for_source(source: str) -> Builder:
    """The builder that claims ``source`` (every source has one: ``file`` takes the rest)."""
    builder = _BUILDERS[kind_of_source(source)]
    assert builder.claims(source)
    return builder


def build_artifact(
    target: Target, resolver: ModuleResolver, reporter: Reporter = SILENT
) -> BuildResult:
    """Build ``target`` with the builder its source names."""
    return builder_for_source(target.source).build(target, resolver, reporter)
