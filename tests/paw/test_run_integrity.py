"""Running a program never turns a checksum SECURITY ERROR into "no interpreter".

The interpreter a wgtpm-built program records is a module of the package's
build list; when its download does not match wgt.sum, ``wgtpm run`` must stop
with that error, not fall back as if the module were simply absent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.paw.conftest import INTERPRETER_MODULE, Built
from wgtpm.proxytree import ProxyTree

APP = "example.com/acme/app"


def test_a_tampered_interpreter_download_is_a_security_error(
    fruit: Built,
    tiny_dir: Path,
    tree: ProxyTree,
    tmp_path: Path,
    wgtpm,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {
        p.relative_to(tiny_dir).as_posix(): p.read_bytes()
        for p in sorted(tiny_dir.rglob("*"))
        if p.is_file()
    }
    tree.add(INTERPRETER_MODULE, "v1.0.0", files)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "wgt.mod").write_text(f"module {APP}\nwgt 0.1\n")
    shutil.copy(fruit.paw, pkg / "fruit.paw")
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{INTERPRETER_MODULE}@v1.0.0", cwd=pkg)
    assert r.code == 0, r.err

    # The same version, one byte changed, served to a machine with an empty cache.
    largest = max(files, key=lambda name: len(files[name]))
    tampered = bytearray(files[largest])
    tampered[len(tampered) // 2] ^= 1
    evil = ProxyTree(tmp_path / "evil")
    evil.add(INTERPRETER_MODULE, "v1.0.0", {**files, largest: bytes(tampered)})
    monkeypatch.setenv("WGTPROXY", evil.url)
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "fresh-cache"))

    r = wgtpm("run", "fruit.paw", "--input", "red", cwd=pkg)
    assert r.code == 1
    assert "SECURITY ERROR" in r.err and INTERPRETER_MODULE in r.err, r.err
    assert "no interpreter" not in r.err
