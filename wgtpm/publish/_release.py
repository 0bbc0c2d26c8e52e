"""Assembling a :class:`~wgtpm.publish.Release` from a build: files, provenance, index, h1.

A release holds ``wgt.mod`` (the committed one), ``wgt.provenance.json``
(:mod:`._provenance`) and every output of every artifact, under the logical
paths the builders name (``xor/weights.safetensors``, ``fruit.paw``,
``data/vocab.json``). The index lists them all with size, sha256 and, for
artifact files, artifact and kind; its ``commit`` and ``time`` are the
commit's, so that building one commit twice gives the same index bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._errors import BuildError
from .._fs import sha256_file, write_atomic
from ..dirhash import hash1_bytes
from ..index import IndexEntry, build_index
from ._provenance import (
    PROVENANCE_FILE,
    ArtifactProvenance,
    SourceRepository,
    provenance_bytes,
    provenance_document,
)
from ._slsa import SLSA_ASSET
from ._target import Release

__all__ = ["INDEX_FILE", "MOD_FILE", "ReleaseSpec", "assemble"]

MOD_FILE = "wgt.mod"
INDEX_FILE = "wgt.index.json"
#: Names the release itself uses (SLSA_ASSET: where GitHub and Hugging Face keep the statement).
RESERVED = frozenset({MOD_FILE, INDEX_FILE, PROVENANCE_FILE, SLSA_ASSET})


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
        spec.module, spec.version, spec.commit, spec.time, built, spec.repository
    )
    prov = staging / PROVENANCE_FILE
    write_atomic(prov, provenance_bytes(doc))
    files[PROVENANCE_FILE] = prov
    kinds = {p: (a.name, a.kind) for a in built for p in a.outputs}
    entries = [
        IndexEntry(p, f.stat().st_size, sha256_file(f), *kinds.get(p, (None, None)))
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
