"""wgt.provenance.json: what the index says of each file, locked by h1 (no build needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from wgtpm._errors import VerifyError
from wgtpm.index import IndexEntry, build_index
from wgtpm.proxytree import ProxyTree
from wgtpm.publish import PROVENANCE_FILE, check_provenance
from wgtpm.publish._provenance import ArtifactProvenance, provenance_bytes, provenance_document

M, V = "example.com/acme/p", "v0.1.0"


def _release(tmp_path: Path, kind: str = "file") -> tuple[object, bytes]:
    (tmp_path / "notes.txt").write_bytes(b"hello\n")
    art = ArtifactProvenance("notes", "file", "notes.txt", {"notes.txt": tmp_path / "notes.txt"})
    doc = provenance_document(M, V, "c" * 40, "2026-11-29T12:00:00Z", [art], {"wgtpm": "0"})
    prov = provenance_bytes(doc)
    files = {
        "wgt.mod": b"module example.com/acme/p\n",
        "notes.txt": b"hello\n",
        PROVENANCE_FILE: prov,
    }
    entries = [
        IndexEntry(
            p,
            len(b),
            hashlib.sha256(b).hexdigest(),
            *(("notes", kind) if p == "notes.txt" else (None, None)),
        )
        for p, b in files.items()
    ]
    return build_index(M, V, entries, commit="c" * 40, build=doc), prov


def test_an_index_that_agrees(tmp_path: Path) -> None:
    index, prov = _release(tmp_path)
    check_provenance(index, prov)


def test_a_changed_kind_is_caught(tmp_path: Path) -> None:
    index, prov = _release(tmp_path, kind="paw")  # the index lies about the kind
    with pytest.raises(VerifyError, match=r"notes\.txt: the index says artifact/kind"):
        check_provenance(index, prov)


def test_the_h1_covers_the_provenance(tmp_path: Path) -> None:
    from wgtpm.dirhash import hash1

    index, prov = _release(tmp_path)
    pairs = {e.path: e.sha256 for e in index.files}  # type: ignore[attr-defined]
    assert hash1(pairs.items()) == index.h1()  # type: ignore[attr-defined]
    lie = prov.replace(b'"kind": "file"', b'"kind": "paw"')
    pairs[PROVENANCE_FILE] = hashlib.sha256(lie).hexdigest()
    assert hash1(pairs.items()) != index.h1()  # type: ignore[attr-defined]


def test_a_file_changed_after_indexing_is_not_written(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_bytes(b"one")
    mod = tmp_path / "wgt.mod"
    mod.write_bytes(b"module example.com/acme/p\n")
    entries = [
        IndexEntry("a.txt", 3, hashlib.sha256(b"one").hexdigest()),
        IndexEntry("wgt.mod", mod.stat().st_size, hashlib.sha256(mod.read_bytes()).hexdigest()),
    ]
    index = build_index(M, V, entries).to_json()
    src.write_bytes(b"two")
    tree = ProxyTree(tmp_path / "tree")
    with pytest.raises(VerifyError, match="changed after it was indexed"):
        tree.put(M, V, index, {"a.txt": src, "wgt.mod": mod})
    assert tree.versions(M) == []
    assert not list((tmp_path / "tree").rglob("a.txt"))
