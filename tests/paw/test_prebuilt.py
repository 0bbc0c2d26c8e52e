"""A prebuilt ``.paw`` named by an ``artifact`` line is a ``paw`` artifact, end to end.

``wgtpm build`` validates it and copies it to ``build/NAME.paw``; the release
lists it with kind ``paw``; ``wgtpm get --paw-install`` installs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paw.conftest import BASE_FILE, BASE_MODULE, Built
from wgtpm.paw.bundle import read_bundle
from wgtpm.proxytree import ProxyTree

MODULE = "example.com/acme/prebuilt"


def _package(root: Path, bundle: bytes) -> Path:
    pkg = root / "pkg"
    (pkg / "vendor").mkdir(parents=True)
    (pkg / "vendor" / "fruit.paw").write_bytes(bundle)
    (pkg / "wgt.mod").write_text(
        f"module {MODULE}\nwgt 0.1\n\nrequire {BASE_MODULE} v1.0.0\n\n"
        "artifact fruit vendor/fruit.paw\n"
    )
    return pkg


def test_a_prebuilt_paw_is_checked_copied_published_and_installed(
    fruit: Built,
    base_dir: Path,
    tree: ProxyTree,
    project: Path,
    wgtpm,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    data = fruit.paw.read_bytes()
    pid = read_bundle(fruit.paw).program_id
    pkg = _package(tmp_path, data)
    r = wgtpm("build", cwd=pkg)
    assert r.code == 0, r.err
    assert r.out.strip() == f"checked vendor/fruit.paw (program {pid}), copied to build/fruit.paw"
    assert (pkg / "build" / "fruit.paw").read_bytes() == data

    tree.add(BASE_MODULE, "v1.0.0", {BASE_FILE: (base_dir / BASE_FILE).read_bytes()})
    idx = tree.add_package(pkg, "v0.1.0")
    assert [(e.path, e.artifact, e.kind) for e in idx.files if e.artifact] == [
        ("fruit.paw", "fruit", "paw")
    ]

    monkeypatch.setenv("WGTPROXY", tree.url)
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "paw-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    r = wgtpm("get", "--paw-install", f"{MODULE}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert f"installed {MODULE}/fruit as PAW program {pid}" in r.err


def test_a_broken_prebuilt_paw_fails_the_build(
    fruit: Built,
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    pkg = _package(tmp_path, b"PK\x03\x04 not a bundle")
    r = wgtpm("build", cwd=pkg)
    assert r.code == 1
    assert "artifact fruit: vendor/fruit.paw" in r.err
    assert not (pkg / "build" / "fruit.paw").exists()
