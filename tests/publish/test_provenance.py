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
    doc = provenance_document(M, V, "c" * 40, "2026-11-29T12:00:00Z", [art])
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


def _serve(tmp_path: Path, kind: str = "file", ghost: bool = False) -> str:
    """A proxy tree holding M@V whose index says ``kind`` of notes.txt (the provenance: file),
    and whose provenance names a file the index lacks when ``ghost``; its file:// URL."""
    (tmp_path / "notes.txt").write_bytes(b"hello\n")
    art = ArtifactProvenance("notes", "file", "notes.txt", {"notes.txt": tmp_path / "notes.txt"})
    doc = provenance_document(M, V, "c" * 40, "2026-11-29T12:00:00Z", [art])
    if ghost:
        doc["files"]["weights.safetensors"] = {"artifact": "notes", "kind": "file"}
    (tmp_path / "prov.json").write_bytes(provenance_bytes(doc))
    (tmp_path / "wgt.mod.src").write_bytes(b"module example.com/acme/p\nwgt 0.1\n")
    files = {
        "wgt.mod": tmp_path / "wgt.mod.src",
        "notes.txt": tmp_path / "notes.txt",
        PROVENANCE_FILE: tmp_path / "prov.json",
    }
    entries = [
        IndexEntry(
            p,
            f.stat().st_size,
            hashlib.sha256(f.read_bytes()).hexdigest(),
            *(("notes", kind) if p == "notes.txt" else (None, None)),
        )
        for p, f in files.items()
    ]
    index = build_index(M, V, entries, commit="c" * 40, build=doc)
    tree = ProxyTree(tmp_path / "tree")
    tree.put(M, V, index.to_json(), files)
    return tree.url


@pytest.mark.parametrize(
    ("kind", "ghost", "said"),
    [
        ("paw", False, "notes.txt: the index says artifact/kind"),
        ("file", True, "lists files the index lacks: ['weights.safetensors']"),
    ],
)
def test_get_refuses_a_release_whose_provenance_contradicts_its_index(  # type: ignore[no-untyped-def]
    wgtpm, project: Path, tmp_path: Path, monkeypatch, kind: str, ghost: bool, said: str
) -> None:
    monkeypatch.setenv("WGTPROXY", _serve(tmp_path, kind, ghost))
    for _ in range(2):  # refused again: the refused version never became a complete tree
        r = wgtpm("get", f"{M}@{V}", cwd=project)
        assert r.code == 1
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"wgtpm: {M}@{V}: "), r.err
        assert said in lines[0] and "Traceback" not in r.err
    assert f"{M} {V}" not in (project / "wgt.mod").read_text()


def test_get_takes_a_release_whose_provenance_agrees(  # type: ignore[no-untyped-def]
    wgtpm, project: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", _serve(tmp_path))
    r = wgtpm("get", f"{M}@{V}", cwd=project)
    assert r.code == 0, r.err


def test_the_fetch_side_loads_the_provenance_check_alone() -> None:
    """``wgtpm get`` imports ``wgtpm.publish._provenance``, not git, httpx or the builders."""
    import json
    import os
    import subprocess
    import sys

    import wgtpm.publish

    root = Path(__file__).resolve().parents[2]
    code = (
        "import json, sys, wgtpm.publish._provenance; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('wgtpm.publish', 'wgtpm.build', 'git', 'httpx')))))"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert json.loads(out) == ["wgtpm.publish", "wgtpm.publish._provenance"]
    for name in wgtpm.publish.__all__:  # every public name still resolves, on first use
        assert getattr(wgtpm.publish, name) is not None
