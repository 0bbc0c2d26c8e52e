"""A consumer requires a published PAW program and gets it verified and installed for offline use."""

from __future__ import annotations

from pathlib import Path

import programasweights as paw
import pytest

from tests.paw.conftest import BASE_FILE, BASE_MODULE, Built
from wgtpm.paw.bundle import read_bundle
from wgtpm.proxytree import ProxyTree


def test_get_paw_install(
    fruit: Built, base_dir: Path, tree: ProxyTree, project: Path, wgtpm, monkeypatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "paw-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    tree.add(BASE_MODULE, "v1.0.0", {BASE_FILE: (base_dir / BASE_FILE).read_bytes()})
    mod = f"module example.com/acme/programs\nwgt 0.1\n\nrequire {BASE_MODULE} v1.0.0\n\nartifact fruit fruit.pawspec\n"
    tree.add(
        "example.com/acme/programs",
        "v0.1.0",
        {"wgt.mod": mod.encode(), "fruit.paw": fruit.paw.read_bytes()},
        artifacts={"fruit.paw": ("fruit", "paw")},
    )
    monkeypatch.setenv("WGTPROXY", tree.url)
    pid = read_bundle(fruit.paw).program_id
    assert not paw.is_offline_ready(pid)
    r = wgtpm("get", "--paw-install", "example.com/acme/programs@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert f"installed example.com/acme/programs/fruit as PAW program {pid}" in r.err
    assert paw.is_offline_ready(pid)
    assert paw.prepare_program(pid, offline=True)["offline_ready"]
    sums = (project / "wgt.sum").read_text()
    assert "example.com/acme/programs v0.1.0 h1:" in sums and f"{BASE_MODULE} v1.0.0 h1:" in sums


def test_get_refuses_a_tampered_program(
    fruit: Built, tree: ProxyTree, project: Path, wgtpm, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    tree.add(
        "example.com/acme/programs",
        "v0.1.0",
        {"fruit.paw": fruit.paw.read_bytes()},
        artifacts={"fruit.paw": ("fruit", "paw")},
    )
    served = tree.root / "example.com/acme/programs/@v/v0.1.0/fruit.paw"
    data = bytearray(served.read_bytes())
    data[len(data) // 2] ^= 1
    served.write_bytes(bytes(data))
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "--paw-install", "example.com/acme/programs@v0.1.0", cwd=project)
    assert r.code == 1 and "fruit.paw" in r.err and "sha256" in r.err
    pytest.importorskip("programasweights")
