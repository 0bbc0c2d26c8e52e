"""The name of ``vendor/wgt.vendor.json`` and its module entries as release indexes.

Apart from :mod:`.vendor` (which writes and checks ``vendor/``) so that readers of a
vendored module's file list (:mod:`wgtpm.tensors`) need not import the project
machinery that :mod:`.vendor` sits on: that import made a cycle once vendor/ held
tensors (vendor -> tensors -> vendor).
"""

from __future__ import annotations

from typing import Any

from ..index import IndexEntry, ReleaseIndex

__all__ = ["MANIFEST", "manifest_index"]

MANIFEST = "wgt.vendor.json"


def manifest_index(m: dict[str, Any]) -> ReleaseIndex:
    """What a fetched module's entry copied from its release index (not its ``build``)."""
    files = [
        IndexEntry(f["path"], f.get("size", 0), f["sha256"], f.get("artifact"), f.get("kind"))
        for f in m.get("files", [])
    ]
    return ReleaseIndex(m["path"], m["version"], files, commit=m.get("commit"))
