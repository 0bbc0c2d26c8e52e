"""Assembling a :class:`~wgtpm.publish.Release` from a build: files, provenance, index, h1.

A release holds ``wgt.mod`` (the committed one), ``wgt.provenance.json``
(:mod:`._provenance`), ``wgt.tensors.json`` when it has ``.safetensors`` or
``.gguf`` files (their tensor tables, :mod:`wgtpm.tensors`: listed in the index,
so h1 locks them, and byte-stable, so building a commit twice gives the same
bytes) and every output of every artifact, under the logical
paths the builders name (``xor/weights.safetensors``, ``fruit.paw``,
``data/vocab.json``). The index lists them all with size, sha256 and, for
artifact files, artifact and kind; its ``commit`` and ``time`` are the
commit's, so that building one commit twice gives the same index bytes.
The provenance also carries ``license`` when wgt.mod declares one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .._errors import BuildError
from .._fs import sha256_file, write_atomic
from ..dirhash import hash1_bytes
from ..index import IndexEntry, build_index
from ..tensors import TABLES_FILE, TensorTables, compute_table, dump_tables, format_of
from ._provenance import (
    PROVENANCE_FILE,
    ArtifactProvenance,
    SourceRepository,
    provenance_bytes,
    provenance_document,
)
from ._target import Release

__all__ = ["INDEX_FILE", "MOD_FILE", "ReleaseSpec", "assemble"]

MOD_FILE = "wgt.mod"
INDEX_FILE = "wgt.index.json"
RESERVED = frozenset({MOD_FILE, INDEX_FILE, PROVENANCE_FILE, TABLES_FILE})


@dataclass(frozen=True)
class ReleaseSpec:
    """What the release is of: module, version, tag, commit and its time."""

    module: str
    version: str
    tag: str
    commit: str
    time: str
    private: bool = False
    repository: SourceRepository | None = None


def assemble(
    spec: ReleaseSpec,
    pkg: Path,
    built: list[ArtifactProvenance],
    tools: Mapping[str, str],
    staging: Path,
) -> Release:
    """The release of ``built`` (outputs in the export ``pkg``); writes the provenance into
    ``staging``."""
    files: dict[str, Path] = {MOD_FILE: pkg / MOD_FILE}
    owner: dict[str, str] = {}
    for art in built:
        for logical, path in art.outputs.items():
            if logical in RESERVED:
                raise BuildError(
                    f"artifact {art.name}: its output {logical} would replace the release's own "
                    f"{logical}; rename the artifact or its source"
                )
            if logical in owner:
                raise BuildError(
                    f"artifacts {owner[logical]} and {art.name} both write {logical}; rename one"
                )
            owner[logical] = art.name
            files[logical] = path
    doc = provenance_document(
        spec.module, spec.version, spec.commit, spec.time, built, tools, spec.repository
    )
    doc.update(_declared_license(files[MOD_FILE]))
    prov = staging / PROVENANCE_FILE
    write_atomic(prov, provenance_bytes(doc))
    files[PROVENANCE_FILE] = prov
    sums = _add_tables(files, staging)
    kinds = {p: (a.name, a.kind) for a in built for p in a.outputs}
    entries = [
        IndexEntry(p, f.stat().st_size, sums.get(p) or sha256_file(f), *kinds.get(p, (None, None)))
        for p, f in sorted(files.items())
    ]
    index = build_index(
        spec.module, spec.version, entries, time=spec.time, commit=spec.commit, build=doc
    )
    return Release(
        module=spec.module,
        version=spec.version,
        commit=spec.commit,
        files=files,
        index=index.to_json(),
        h1=index.h1(),
        mod_h1=hash1_bytes({MOD_FILE: files[MOD_FILE].read_bytes()}),
        private=spec.private,
        extra={"tag": spec.tag},
    )


def _declared_license(mod: Path) -> dict[str, str]:
    """``{"license": EXPRESSION}`` when the package's wgt.mod declares one, for the
    provenance: a fact of the release (the committed wgt.mod), so it may lie under h1."""
    from ..modfile import parse

    mf = parse(mod.read_bytes(), str(mod))
    return {"license": mf.license.expression} if mf.license else {}


def _add_tables(files: dict[str, Path], staging: Path) -> dict[str, str]:
    """Write the tensor tables of the release's weights files into ``staging`` and add
    them to ``files``, when it has any; the sha256 of each weights file (read once for
    its table, so not hashed again for the index)."""
    tables = {
        p: compute_table(f, p, where=f"release file {p}")
        for p, f in sorted(files.items())
        if format_of(p) is not None
    }
    if not tables:
        return {}
    out = staging / TABLES_FILE
    write_atomic(out, dump_tables(TensorTables(tables)))
    files[TABLES_FILE] = out
    return {p: t.sha256 for p, t in tables.items()}
