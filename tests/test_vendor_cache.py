"""``wgtpm vendor`` / ``-mod=vendor`` with no network, and the ``cache`` commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

from wgtpm.cache import Cache
from wgtpm.proxytree import ProxyTree


def _setup(tree: ProxyTree) -> None:
    tree.add(
        "github.com/acme/base",
        "v0.1.0",
        {"wgt.mod": b"module github.com/acme/base\n", "xor/weights.bin": b"W" * 100},
    )
    tree.add(
        "github.com/acme/cls",
        "v0.2.0",
        {
            "wgt.mod": b"module github.com/acme/cls\nrequire github.com/acme/base v0.1.0\n",
            "cls/weights.bin": b"C" * 50,
        },
    )


def test_vendor_then_offline(wgtpm, tree, project, monkeypatch) -> None:
    _setup(tree)
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/cls@v0.2.0", cwd=project).code == 0
    r = wgtpm("vendor", cwd=project)
    assert r.code == 0, r.err
    v = project / "vendor"
    assert (v / "github.com/acme/base/xor/weights.bin").read_bytes() == b"W" * 100
    manifest = json.loads((v / "wgt.vendor.json").read_text())
    assert [(m["path"], m["version"], m["explicit"]) for m in manifest["modules"]] == [
        ("github.com/acme/base", "v0.1.0", False),
        ("github.com/acme/cls", "v0.2.0", True),
    ]
    # No network, no cache: vendor/ alone.
    Cache().clean()
    monkeypatch.setenv("WGTPROXY", "off")
    monkeypatch.setenv("WGTPM_CACHE", str(project.parent / "elsewhere"))
    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    from wgtpm.modload import open_resolver

    res = open_resolver(project)
    assert (res.module("github.com/acme/base").dir / "xor/weights.bin").read_bytes() == b"W" * 100
    assert wgtpm("verify", cwd=project).code == 0
    out = wgtpm("list", "-m", "all", cwd=project).out
    assert "github.com/acme/base v0.1.0" in out
    # A changed vendored file is caught before use.
    f = v / "github.com/acme/base/xor/weights.bin"
    f.write_bytes(b"tampered")
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "was changed" in r.err
    # wgt.mod out of step with vendor/ is refused.
    (project / "wgt.mod").write_text((project / "wgt.mod").read_text().replace("v0.2.0", "v0.3.0"))
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "inconsistent vendoring" in r.err


def test_cache_commands(wgtpm, tree, project, monkeypatch) -> None:
    _setup(tree)
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/cls@v0.2.0", cwd=project).code == 0
    r = wgtpm("cache", "dir")
    assert r.out.strip() == os.environ["WGTPM_CACHE"]
    assert wgtpm("cache", "verify").code == 0
    cache = Cache()
    # A blob changed behind wgtpm's back is found by both verifications.
    tree_file = cache.mod_dir("github.com/acme/base", "v0.1.0") / "xor/weights.bin"
    os.chmod(tree_file, 0o644)
    tree_file.write_bytes(b"X" * 100)
    r = wgtpm("cache", "verify")
    assert r.code == 1 and "does not match" in r.err
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "github.com/acme/base@v0.1.0: xor/weights.bin has been modified" in r.err
    # gc frees an orphaned blob and a stale partial; clean removes everything.
    orphan = cache.put_bytes(b"nobody uses me")
    (cache.root / "tmp" / "dead.partial").write_bytes(b"x")
    n, size = cache.gc()
    assert size == len(b"nobody uses me") + 1
    assert n == 2 and not cache.has_blob(orphan)
    assert (cache.mod_dir("github.com/acme/cls", "v0.2.0") / "cls/weights.bin").exists()
    assert wgtpm("cache", "clean").code == 0
    assert not (cache.root / "mod").exists() and not (cache.root / "blobs").exists()


def test_get_json_and_mod_edit_json(wgtpm, tree, project, monkeypatch) -> None:
    _setup(tree)
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "--json", "github.com/acme/cls@v0.2.0", cwd=project)
    doc = json.loads(r.out)
    assert all(Path(m.pop("dir")).is_dir() for m in doc["build"])
    assert doc["build"] == [
        {"path": "github.com/acme/base", "version": "v0.1.0"},
        {"path": "github.com/acme/cls", "version": "v0.2.0"},
    ]
    assert {"path": "github.com/acme/cls", "old": None, "new": "v0.2.0"} in doc["changes"]
    r = wgtpm(
        "mod",
        "edit",
        "-artifact",
        "model=model.wgt",
        "-select",
        "github.com/acme/base=*.bin",
        "-json",
        cwd=project,
    )
    doc = json.loads(r.out)
    assert doc["artifact"] == [{"name": "model", "source": "model.wgt", "kind": "wgt"}]
    assert doc["select"] == [{"path": "github.com/acme/base", "patterns": ["*.bin"]}]
    assert "artifact" not in (project / "wgt.mod").read_text()  # -json prints, does not write
    assert wgtpm("mod", "edit", "-artifact", "model=model.wgt", cwd=project).code == 0
    assert "artifact model model.wgt" in (project / "wgt.mod").read_text()
    r = wgtpm("mod", "edit", "-require", "github.com/acme/x@v1.0", cwd=project)
    assert r.code == 1 and "canonical" in r.err
    r = wgtpm("mod", "edit", "-require", "github.com/acme/x@1.0.0", cwd=project)
    assert r.code == 1 and "did you mean github.com/acme/x@v1.0.0?" in r.err
    assert Path(project / "wgt.mod").read_text().count("require") == 1


def test_etag_store_round_trips() -> None:
    cache = Cache()
    assert cache.get_etag("github:https://api.example/releases") is None
    cache.put_etag("github:https://api.example/releases", '"abc"', b'[{"tag_name": "v1.0.0"}]')
    assert cache.get_etag("github:https://api.example/releases") == (
        '"abc"',
        b'[{"tag_name": "v1.0.0"}]',
    )
