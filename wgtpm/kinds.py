"""Artifact kinds by name, and which kind a source file is: the pure half of the registry.

``artifact NAME SOURCE`` in wgt.mod declares what a package publishes; the
kind of the artifact follows from the source's suffix alone::

    SOURCE              kind   built by (wgtpm.build)         published as
    model.wgt           wgt    compiled and trained            NAME/manifest.json, ...
    triage.pawspec      paw    LoRA-finetuned into a program   NAME.paw
    triage.paw          paw    validated as it is (prebuilt)   NAME.paw
    data/vocab.json     file   shipped verbatim                data/vocab.json

The same names are the ``kind`` of a release index entry (docs/design.md section
5). This module holds only the table: no file system, no builders, so that
the pure :mod:`wgtpm.modfile` may ask it. The builders register themselves
under these names in :mod:`wgtpm.build`.

>>> kind_of_source("model.wgt"), kind_of_source("t.paw"), kind_of_source("a.json")
('wgt', 'paw', 'file')
"""

from __future__ import annotations

from ._errors import UsageError

__all__ = ["FILE", "KINDS", "PAW", "SUFFIXES", "WGT", "check_kind", "kind_of_source"]

WGT = "wgt"
PAW = "paw"
FILE = "file"

#: Every kind, in the order builders are asked to claim a source.
KINDS: tuple[str, ...] = (WGT, PAW, FILE)

#: Source suffix -> kind; a source with none of these is a ``file``.
SUFFIXES: dict[str, str] = {".wgt": WGT, ".pawspec": PAW, ".paw": PAW}


def kind_of_source(source: str) -> str:
    """The kind of an artifact built from ``source`` (a path as written in wgt.mod)."""
    for suffix, kind in SUFFIXES.items():
        if source.endswith(suffix):
            return kind
    return FILE


def check_kind(kind: str) -> str:
    """``kind`` if this wgtpm knows it (the ``kind`` of an index entry); else :class:`UsageError`."""
    if kind not in KINDS:
        raise UsageError(
            f"unknown artifact kind {kind!r}; this wgtpm knows {', '.join(KINDS)} (upgrade wgtpm?)"
        )
    return kind
