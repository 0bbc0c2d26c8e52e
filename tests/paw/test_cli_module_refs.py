"""``paw validate|inspect|install`` take MODULE/ARTIFACT as install always did, and ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.paw.conftest import BASE_FILE, BASE_MODULE, Built
from wgtpm.paw.bundle import read_bundle
from wgtpm.proxytree import ProxyTree

PROGRAMS = "example.com/acme/programs"


def test_module_artifact_refs_and_json(
    fruit: Built, base_dir: Path, tree: ProxyTree, project: Path, wgtpm, monkeypatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "paw-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    monkeypatch.setenv("PAW_API_URL", "http://127.0.0.1:9")
    tree.add(BASE_MODULE, "v1.0.0", {BASE_FILE: (base_dir / BASE_FILE).read_bytes()})
    mod = f"module {PROGRAMS}\nwgt 0.1\n\nrequire {BASE_MODULE} v1.0.0\n\nartifact fruit fruit.pawspec\n"
    tree.add(
        PROGRAMS,
        "v0.1.0",
        {"wgt.mod": mod.encode(), "fruit.paw": fruit.paw.read_bytes()},
        artifacts={"fruit.paw": ("fruit", "paw")},
    )
    monkeypatch.setenv("WGTPROXY", tree.url)
    pid = read_bundle(fruit.paw).program_id
    assert wgtpm("get", f"{PROGRAMS}@v0.1.0", cwd=project).code == 0

    r = wgtpm("paw", "validate", f"{PROGRAMS}/fruit", cwd=project)
    assert r.code == 0, r.err
    assert f"ok: program {pid}" in r.out
    r = wgtpm("paw", "validate", "--json", f"{PROGRAMS}/fruit", cwd=project)
    doc = json.loads(r.out)
    assert doc["ok"] is True and doc["program_id"] == pid
    r = wgtpm("paw", "inspect", "--json", f"{PROGRAMS}/fruit", cwd=project)
    assert r.code == 0, r.err
    assert json.loads(r.out)["program_id"] == pid
    r = wgtpm("paw", "install", "--json", f"{PROGRAMS}/fruit", cwd=project)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["program_id"] == pid and doc["changed"] is True and Path(doc["program_dir"]).is_dir()
    r = wgtpm("paw", "validate", "--json", f"{PROGRAMS}/nope", cwd=project)
    assert r.code == 1 and json.loads(r.out)["error"]["kind"] == "usage"
    assert "has no PAW program artifact 'nope'" in r.err
