"""``verify --rebuild`` compares the rebuilding machine with the build the SLSA statement records.

The xor-base example is published (with an ``origin`` remote served on
loopback) into a proxy tree, which then stands for a publisher's machine
whose tools differ: its statement is rewritten (unsigned, as ``publish``
writes it without a key) to record other versions. The rebuild names each
tool that differs and where the versions were read; a statement about other
files is ignored with a warning; without one, one note says the versions are
unknown; a release of provenance schema 1 (``tools`` inside
``wgt.provenance.json``) is still read from there.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.publish.test_rebuild import XOR_BASE, _publish_and_get, _xor_base, served  # noqa: F401
from wgtpm.publish import PROVENANCE_FILE
from wgtpm.publish._provenance import tool_versions
from wgtpm.publish._slsa import envelope_bytes, read_envelope

pytestmark = pytest.mark.slow


def _rewrite_statement(path: Path, tools: dict[str, str], subject_sha: str | None = None) -> None:
    stmt, _, _ = read_envelope(path.read_bytes())
    stmt["predicate"]["buildDefinition"]["internalParameters"]["tools"] = tools
    if subject_sha:
        stmt["subject"][1]["digest"]["sha256"] = subject_sha
    path.write_bytes(envelope_bytes(stmt, None))


def test_the_tools_that_differ_from_the_statement_are_named(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: str,  # noqa: F811
) -> None:
    pkg, _ = _xor_base(tmp_path, served)
    p = _publish_and_get(wgtpm, pkg, XOR_BASE, tmp_path, monkeypatch)
    statement = p.dist / XOR_BASE / "@v/v0.1.0.slsa.json"
    theirs = tool_versions() | {"gguf": "0.0.1", "torch": "1.0.0"}
    _rewrite_statement(statement, theirs)

    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=p.app)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    here = tool_versions()
    assert doc["tools"] == {
        "gguf": {"release": "0.0.1", "here": here.get("gguf")},
        "torch": {"release": "1.0.0", "here": here["torch"]},
    }
    shown = f"{(p.dist).as_uri()}/{XOR_BASE}/@v/v0.1.0.slsa.json"
    assert doc["environment"] == shown
    assert f"the SLSA statement at {shown} (unsigned)" in r.err

    # a statement whose subject is not the release wgt.sum locks is not believed
    _rewrite_statement(statement, theirs, subject_sha="0" * 64)
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=p.app)
    assert r.code == 0, r.err
    assert json.loads(r.out)["tools"] == {} and json.loads(r.out)["environment"] is None
    assert "is about other files than the release wgt.sum locks; ignored" in r.err

    statement.unlink()
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=p.app)
    assert r.code == 0, r.err
    assert json.loads(r.out)["tools"] == {}
    assert "no WGTPROXY entry serves its SLSA provenance statement" in r.err


def test_a_schema_1_release_is_read_from_its_provenance(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: str,  # noqa: F811
) -> None:
    pkg, _ = _xor_base(tmp_path, served)
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    # what wgtpm wrote before the environment moved out: schema 1, with tools, no statement
    vdir = pkg / "dist" / XOR_BASE / "@v"
    (vdir / "v0.1.0.slsa.json").unlink()
    prov_file = vdir / "v0.1.0" / PROVENANCE_FILE
    doc = json.loads(prov_file.read_text())
    doc = {"schema": 1, **{k: v for k, v in doc.items() if k != "schema"}}
    doc["tools"] = tool_versions() | {"torch": "1.0.0"}
    data = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
    prov_file.write_bytes(data)
    index_file = vdir / "v0.1.0.index.json"
    index = json.loads(index_file.read_text())
    index["build"] = doc
    for e in index["files"]:
        if e["path"] == PROVENANCE_FILE:
            e["sha256"], e["size"] = hashlib.sha256(data).hexdigest(), len(data)
    index_file.write_text(json.dumps(index))

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", f"{XOR_BASE}@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=app)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["tools"] == {"torch": {"release": "1.0.0", "here": tool_versions()["torch"]}}
    assert out["environment"] == PROVENANCE_FILE
