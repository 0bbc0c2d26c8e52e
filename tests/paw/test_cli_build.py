"""``wgtpm build`` compiles a ``.pawspec`` through the registry and shows the builder's notices."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paw.conftest import BASE_FILE, BASE_MODULE, INTERPRETER_MODULE, write_package
from wgtpm.paw.validate import validate_file
from wgtpm.proxytree import ProxyTree


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_build_a_pawspec_package(
    tiny_dir: Path,
    base_dir: Path,
    tree: ProxyTree,
    tmp_path: Path,
    wgtpm,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree.add(INTERPRETER_MODULE, "v1.0.0", _files(tiny_dir))
    tree.add(BASE_MODULE, "v1.0.0", {BASE_FILE: (base_dir / BASE_FILE).read_bytes()})
    pkg = tmp_path / "pkg"
    write_package(pkg)
    (pkg / "wgt.mod").write_text(
        "module example.com/acme/fruit\nwgt 0.1\n\nartifact fruit fruit.pawspec\n"
    )
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{INTERPRETER_MODULE}@v1.0.0", f"{BASE_MODULE}@v1.0.0", cwd=pkg)
    assert r.code == 0, r.err

    r = wgtpm("build", cwd=pkg)
    assert r.code == 0, r.err
    assert r.out == "built build/fruit.paw from fruit.pawspec\n"
    notices = r.err.splitlines()
    assert "wgtpm: paw fruit: training a rank-32 LoRA from a random LoRA on 4 examples" in notices
    assert "paw fruit: step 1/150" in r.err and "paw fruit: step 150/150" in r.err
    assert notices[-1].startswith("wgtpm: paw fruit: wrote ")
    validate_file(pkg / "build" / "fruit.paw")
