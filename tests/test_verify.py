"""``wgtpm verify`` hashes every cached file of the build list, several at once, and reports
what differs in the order of the build list and of each index, whatever finishes first."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from wgtpm._fs import sha256_file
from wgtpm.cache import Cache
from wgtpm.proxytree import ProxyTree
from wgtpm.publish._provenance import PROVENANCE_FILE

MiB = 1 << 20


@pytest.mark.parametrize("size", [0, 1, MiB - 1, MiB, MiB + 1, 3 * MiB + 7])
def test_sha256_file_across_block_edges(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(data).hexdigest()


def _shards(tag: bytes) -> dict[str, bytes]:
    """Files of mixed sizes, so that they finish hashing in another order than listed."""
    return {
        "a/small.bin": tag * 10,
        "b/large.bin": tag * (3 * MiB),
        "c/medium.bin": tag * MiB,
        "d/tiny.bin": tag,
    }


def _tamper(f: Path, data: bytes) -> None:
    os.chmod(f, 0o644)
    f.write_bytes(data)


def test_verify_reports_every_changed_file_in_order(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    for name, tag in (("one", b"1"), ("two", b"2")):
        tree.add(f"example.com/{name}", "v0.1.0", _shards(tag))
        assert wgtpm("get", f"example.com/{name}@v0.1.0", cwd=project).code == 0
    assert wgtpm("verify", cwd=project).out.strip() == "all modules verified"
    one = Cache().mod_dir("example.com/one", "v0.1.0")
    two = Cache().mod_dir("example.com/two", "v0.1.0")
    # Blobs are shared by content: change the ones of "two" only (tag 2).
    _tamper(two / "d/tiny.bin", b"X")
    _tamper(two / "b/large.bin", b"2" * (3 * MiB - 1) + b"X")  # the last byte only
    _tamper(two / "a/small.bin", b"2" * 10)  # the same bytes again: still fine
    os.chmod(one / "c", 0o755)
    (one / "c/medium.bin").unlink()
    r = wgtpm("verify", cwd=project)
    assert r.code == 1
    assert r.err.splitlines() == [
        "example.com/one@v0.1.0: c/medium.bin is missing from the cache (run 'wgtpm get')",
        "example.com/two@v0.1.0: b/large.bin has been modified in the cache "
        "(run 'wgtpm cache clean' and get it again)",
        "example.com/two@v0.1.0: d/tiny.bin has been modified in the cache "
        "(run 'wgtpm cache clean' and get it again)",
    ]


def _notes_release(tree: ProxyTree, tmp_path: Path) -> tuple[str, str]:
    """A release of one file artifact (notes.txt) with its provenance, as publish writes it."""
    from wgtpm.publish._provenance import (
        ArtifactProvenance,
        provenance_bytes,
        provenance_document,
    )

    mod, version, commit = "example.com/acme/notes", "v0.1.0", "c" * 40
    (tmp_path / "notes.txt").write_bytes(b"hello\n")
    art = ArtifactProvenance("notes", "file", "notes.txt", {"notes.txt": tmp_path / "notes.txt"})
    doc = provenance_document(mod, version, commit, "2026-11-29T12:00:00Z", [art])
    files = {"notes.txt": b"hello\n", PROVENANCE_FILE: provenance_bytes(doc)}
    arts = {"notes.txt": ("notes", "file")}
    tree.add(mod, version, files, commit=commit, artifacts=arts, build=doc)
    return mod, version


def test_verify_refuses_an_index_its_provenance_contradicts(
    wgtpm, tree: ProxyTree, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's artifact and kind of a file are outside h1, the provenance is inside:
    an index changed in the cache keeps its h1 and wgt.sum line, and only the provenance
    check (the one 'wgtpm get' runs) sees it."""
    mod, version = _notes_release(tree, tmp_path)
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", f"{mod}@{version}", cwd=project).code == 0
    assert wgtpm("verify", cwd=project).out.strip() == "all modules verified"

    cached = Cache().meta_path(mod, version, "index.json")
    index = json.loads(cached.read_bytes())
    (entry,) = [e for e in index["files"] if e["path"] == "notes.txt"]
    entry["kind"] = "paw"  # not hashed into h1
    _tamper(cached, json.dumps(index).encode())
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and r.out == ""
    assert r.err.splitlines() == [
        f"{mod}@{version}: notes.txt: the index says artifact/kind "
        "{'artifact': 'notes', 'kind': 'paw'}, wgt.provenance.json says "
        "{'artifact': 'notes', 'kind': 'file'}; the index was changed after publishing"
    ]


def _notes_entry(doc: dict[str, Any], path: str) -> dict[str, Any]:
    (m,) = doc["modules"]
    found: dict[str, Any] = next(f for f in m["files"] if f["path"] == path)
    return found


def test_vendor_verify_refuses_a_provenance_its_manifest_contradicts(
    wgtpm, tree: ProxyTree, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under -mod=vendor, vendor/wgt.vendor.json holds what the index says of each file
    (outside h1) and the vendored provenance says it again (inside h1): verify checks the
    two against each other, as it does for the cache. Each change below keeps every hash
    in agreement with wgt.sum, so only that check sees it."""
    mod, version = _notes_release(tree, tmp_path)
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text(
        f"module example.com/app\nwgt 0.1\nselect {mod} notes.txt\n"
    )  # the provenance is vendored whatever select says
    assert wgtpm("get", f"{mod}@{version}", cwd=project).code == 0
    assert wgtpm("vendor", cwd=project).code == 0
    ok = wgtpm("verify", "-mod=vendor", cwd=project)
    assert (ok.code, ok.out.strip()) == (0, "all modules verified"), ok.err
    manifest, sums = project / "vendor/wgt.vendor.json", project / "wgt.sum"
    good_manifest, good_sums = manifest.read_bytes(), sums.read_bytes()
    said = "{'artifact': 'notes', 'kind': %r}"

    # The manifest's kind of a file (not hashed into h1).
    doc = json.loads(good_manifest)
    _notes_entry(doc, "notes.txt")["kind"] = "paw"
    manifest.write_text(json.dumps(doc))
    r = wgtpm("verify", "-mod=vendor", cwd=project)
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [
        f"{mod}@{version}: notes.txt: the index says artifact/kind {said % 'paw'}, "
        f"{PROVENANCE_FILE} says {said % 'file'}; the index was changed after publishing"
    ]

    # A manifest without the index's commit (an older wgtpm's) cannot be checked: say so.
    doc = json.loads(good_manifest)
    del doc["modules"][0]["commit"]
    manifest.write_text(json.dumps(doc))
    r = wgtpm("verify", "-mod=vendor", cwd=project)
    assert r.err.splitlines() == [
        f"{mod}@{version}: vendor/wgt.vendor.json does not say what the index says of its "
        "files (written by an older wgtpm); run 'wgtpm vendor' again"
    ]

    # The provenance file rewritten, with its sha256 in the manifest and h1 in wgt.sum to match.
    from wgtpm.modload.vendor import manifest_h1

    prov = project / "vendor" / mod / PROVENANCE_FILE
    pdoc = json.loads(prov.read_bytes())
    pdoc["files"]["notes.txt"]["kind"] = "paw"
    _tamper(prov, json.dumps(pdoc).encode())
    doc = json.loads(good_manifest)
    entry = _notes_entry(doc, PROVENANCE_FILE)
    entry.update(sha256=sha256_file(prov), size=prov.stat().st_size)
    manifest.write_text(json.dumps(doc))
    (m,) = doc["modules"]
    sums.write_text(good_sums.decode().replace(m["h1"], manifest_h1(m)))
    r = wgtpm("verify", "-mod=vendor", cwd=project)
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [
        f"{mod}@{version}: notes.txt: the index says artifact/kind {said % 'file'}, "
        f"{PROVENANCE_FILE} says {said % 'paw'}; the index was changed after publishing"
    ]


@pytest.mark.parametrize("size", [0, 1, 4095, 1 << 16, (1 << 16) + 1, 3 * (1 << 16) - 7])
def test_a_blob_hashed_from_its_map_is_hashed_right(tmp_path, monkeypatch, size) -> None:
    """verify hashes cache files from a map of the page cache, window by window (64 KiB
    windows here): the same sha256 as reading them, at every size around the windows."""
    from wgtpm import _fs

    monkeypatch.setattr(_fs, "MAP_WINDOW", 1 << 16)
    f = tmp_path / "blob"
    data = os.urandom(size)
    f.write_bytes(data)
    assert _fs.sha256_blob(f) == hashlib.sha256(data).hexdigest() == _fs.sha256_file(f)
