"""Licenses and deprecation: SPDX expressions, wgt.mod's ``license``/``deny-license`` lines,
the ``Deprecated:`` comment, and what ``get`` and ``list`` do with them (issue 28)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_get import pub
from wgtpm import modfile, spdx
from wgtpm._errors import ParseError
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.huggingface import card_license

# ---- SPDX expressions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("MIT", "MIT"),
        ("apache-2.0 or mit", "apache-2.0 OR mit"),
        ("MIT OR Apache-2.0 AND CC-BY-4.0", "MIT OR Apache-2.0 AND CC-BY-4.0"),
        ("(MIT OR Apache-2.0) AND CC-BY-4.0", "(MIT OR Apache-2.0) AND CC-BY-4.0"),
        ("GPL-2.0-only WITH Classpath-exception-2.0", "GPL-2.0-only WITH Classpath-exception-2.0"),
        ("GPL-2.0+", "GPL-2.0+"),
        ("LicenseRef-acme-1.0", "LicenseRef-acme-1.0"),
        ("DocumentRef-x:LicenseRef-y", "DocumentRef-x:LicenseRef-y"),
        ("((MIT))", "MIT"),
    ],
)
def test_spdx_parses(text: str, shown: str) -> None:
    assert str(spdx.parse(text)) == shown


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        ("", 0, "expression ends where a license was expected"),
        ("MIT OR", 6, "expression ends where a license was expected"),
        ("(MIT", 4, "missing ')'"),
        ("MIT)", 3, "unexpected ')' after a complete expression"),
        ("MIT WITH", 8, "WITH must be followed by an exception identifier"),
        ("AND MIT", 0, "expected a license, found 'AND'"),
        ("MIT @", 4, "unexpected '@'"),
        ("M+T", 0, "'M+T' is not a license identifier"),
        ("x" * (spdx.MAX_EXPRESSION + 1), spdx.MAX_EXPRESSION, "longer than"),
    ],
)
def test_spdx_errors(text: str, offset: int, message: str) -> None:
    with pytest.raises(spdx.SpdxError) as e:
        spdx.parse(text)
    assert e.value.offset == offset and e.value.message.startswith(message)


@pytest.mark.parametrize(
    ("expr", "deny", "hit"),
    [
        ("MIT", ["GPL-3.0-only"], None),
        ("GPL-3.0-only", ["GPL-3.0-only"], "GPL-3.0-only"),
        ("gpl-3.0-only", ["GPL-3.0-only"], "GPL-3.0-only"),  # ids compare without case
        ("MIT OR GPL-3.0-only", ["GPL-3.0-only"], None),  # MIT may be chosen
        ("MIT AND GPL-3.0-only", ["GPL-3.0-only"], "GPL-3.0-only"),
        ("(MIT OR GPL-3.0-only) AND AGPL-3.0-only", ["AGPL-3.0-only"], "AGPL-3.0-only"),
        ("GPL-3.0-only OR AGPL-3.0-only", ["GPL-3.0-only", "AGPL-3.0-only"], "GPL-3.0-only"),
        ("GPL-2.0-only WITH Classpath-exception-2.0", ["GPL-2.0-only"], "GPL-2.0-only"),
        ("GPL-2.0-only", ["GPL-2.0-only WITH Classpath-exception-2.0"], None),
        (None, ["NOASSERTION"], "NOASSERTION"),
        (None, ["GPL-3.0-only"], None),
    ],
)
def test_spdx_refused(expr: str | None, deny: list[str], hit: str | None) -> None:
    ds = [spdx.parse(d) for d in deny]
    assert all(isinstance(d, spdx.License) for d in ds)
    got = spdx.refused(spdx.parse(expr) if expr else None, ds)  # type: ignore[arg-type]
    assert (str(got) if got else None) == hit


def test_spdx_refused_is_linear_on_a_deep_expression() -> None:
    """Choices are never expanded: 40 ANDed ORs would be 2**40 of them."""
    e = spdx.parse(" AND ".join(f"(A{i} OR B{i})" for i in range(40)))
    assert spdx.refused(e, [spdx.License("B39")]) is None
    assert str(spdx.refused(e, [spdx.License("A39"), spdx.License("B39")])) == "A39"


# ---- wgt.mod ---------------------------------------------------------------------------


def test_modfile_license_and_deny_license_positions() -> None:
    mf = modfile.parse(
        b"module example.com/app\nwgt 0.1\nlicense MIT OR Apache-2.0\n"
        b'deny-license GPL-3.0-only "GPL-2.0-only WITH Classpath-exception-2.0"\n'
        b"deny-license (\n\tAGPL-3.0-only\n)\n",
        "wgt.mod",
    )
    assert mf.license is not None and mf.license.expression == "MIT OR Apache-2.0"
    assert [(str(d.license), str(d.pos)) for d in mf.deny_licenses] == [
        ("GPL-3.0-only", "wgt.mod:4:14"),
        ("GPL-2.0-only WITH Classpath-exception-2.0", "wgt.mod:4:27"),
        ("AGPL-3.0-only", "wgt.mod:6:2"),
    ]
    hit = mf.denied(spdx.parse("MIT AND agpl-3.0-only"))
    assert hit is not None and str(hit.pos) == "wgt.mod:6:2"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (b"license\n", "wgt.mod:2:1: usage: license EXPRESSION"),
        (
            b"license MIT\nlicense MIT\n",
            "wgt.mod:3:1: repeated license statement (first at line 2)",
        ),
        (b"license MIT OR\n", "wgt.mod:2:9: license 'MIT OR': expression ends where"),
        (b"license (MIT OR X)\n", "wgt.mod:2:9: nothing may follow '('"),
        (b"deny-license\n", "wgt.mod:2:1: usage: deny-license LICENSE..."),
        (b"deny-license MIT OR X\n", "wgt.mod:2:18: deny-license names licenses, not an expr"),
        (b'deny-license "MIT AND X"\n', "wgt.mod:2:14: deny-license 'MIT AND X': name one"),
    ],
)
def test_modfile_license_errors(text: bytes, error: str) -> None:
    with pytest.raises(ParseError) as e:
        modfile.parse(b"module example.com/app\n" + text, "wgt.mod")
    assert str(e.value.errors[0]).startswith(error)


@pytest.mark.parametrize(
    ("text", "deprecated"),
    [
        (b"module example.com/a\n", ""),
        (b"module example.com/a // Deprecated: use example.com/b\n", "use example.com/b"),
        (
            b"// Deprecated: use example.com/b\n// instead.\nmodule example.com/a\n",
            "use example.com/b instead.",
        ),
        (b"// A model.\n//\n// Deprecated: gone.\nmodule example.com/a\n", "gone."),
        (b"// Deprecated: first.\n//\n// More text.\nmodule example.com/a\n", "first."),
        (b"// Not Deprecated: no.\nmodule example.com/a\n", ""),
        (b"// Deprecated: no: a free comment.\n\nmodule example.com/a\n", ""),
    ],
)
def test_modfile_deprecated(text: bytes, deprecated: str) -> None:
    mf = modfile.parse(text)
    assert mf.module is not None and mf.module.deprecated == deprecated
    assert modfile.parse(mf.format()).module.deprecated == deprecated  # type: ignore[union-attr]


def test_modfile_license_edits_round_trip() -> None:
    mf = modfile.new("example.com/app")
    mf.set_license("(MIT OR Apache-2.0) AND CC-BY-4.0")
    mf.add_deny_license("GPL-3.0-only")
    mf.add_deny_license("NOASSERTION")
    text = mf.format().decode()
    assert text == (
        'module example.com/app\nwgt 0.1\n\nlicense "(MIT OR Apache-2.0) AND CC-BY-4.0"\n\n'
        "deny-license (\n\tGPL-3.0-only\n\tNOASSERTION\n)\n"
    )
    mf.drop_deny_license("GPL-3.0-only")
    mf.set_license(None)
    assert modfile.parse(mf.format()).deny_licenses[0].license == spdx.License("NOASSERTION")
    assert mf.license is None
    with pytest.raises(spdx.SpdxError):
        mf.set_license("MIT OR")


# ---- model cards ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card", "license"),
    [
        (b"---\nlicense: apache-2.0\n---\n# x\n", "apache-2.0"),
        (b"---\r\nlicense: 'mit' # c\r\n---\r\n", "mit"),
        (b"---\ntags:\n- a\nlicense:\n  - mit\n  - cc-by-4.0\nfoo: 1\n---\n", "mit AND cc-by-4.0"),
        (b"---\nextra:\n  license: mit\n---\n", None),  # not the top-level key
        (b"license: mit\n", None),  # no front matter
        (b"---\nlicense: mit\n", None),  # front matter never closed
        (b"---\n" + b"x: y\n" * 20000 + b"license: mit\n---\n", None),  # past MAX_CARD_HEADER
    ],
)
def test_card_license(card: bytes, license: str | None) -> None:
    assert card_license(card) == license


# ---- get and list ---------------------------------------------------------------------


def _deps(tree: ProxyTree) -> None:
    """a v0.1.0 (MIT) -> b v0.1.0 (GPL-3.0-only); c v0.1.0 (no license)."""
    pub(tree, "github.com/acme/b", "v0.1.0", extra="license GPL-3.0-only\n")
    pub(tree, "github.com/acme/a", "v0.1.0", ["github.com/acme/b v0.1.0"], extra="license MIT\n")
    pub(tree, "github.com/acme/c", "v0.1.0")


def test_get_refuses_a_denied_license_and_writes_nothing(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _deps(tree)
    mod = "module example.com/app\nwgt 0.1\n\ndeny-license AGPL-3.0-only GPL-3.0-only\n"
    (project / "wgt.mod").write_text(mod)
    r = wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project)
    assert r.code == 1
    assert r.err == (
        "wgtpm: github.com/acme/b@v0.1.0: its license GPL-3.0-only (wgt.mod) is denied by "
        f"{project / 'wgt.mod'}:4:28 (deny-license GPL-3.0-only); exclude it or change "
        "deny-license\n"
    )
    assert (project / "wgt.mod").read_text() == mod
    assert not (project / "wgt.sum").exists()
    cache = Path(os.environ["WGTPM_CACHE"])  # nothing of the build list was downloaded
    assert not [p for p in cache.rglob("weights.bin")]

    (project / "wgt.mod").write_text(mod.replace("GPL-3.0-only\n", "LGPL-3.0-only\n"))
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0


def test_get_deny_noassertion_refuses_a_module_without_license(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _deps(tree)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\nrequire github.com/acme/c v0.1.0\ndeny-license NOASSERTION\n"
    )
    before = (project / "wgt.mod").read_bytes()
    r = wgtpm("get", cwd=project)  # no arguments: the build list as it stands
    assert r.code == 1
    assert "github.com/acme/c@v0.1.0: it declares no license (NOASSERTION) is denied" in r.err
    assert r.err.count("\n") == 1
    assert (project / "wgt.mod").read_bytes() == before and not (project / "wgt.sum").exists()


def test_only_the_main_modules_deny_license_counts(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.1.0", extra="license GPL-3.0-only\n")
    pub(
        tree,
        "github.com/acme/a",
        "v0.1.0",
        ["github.com/acme/b v0.1.0"],
        extra="license MIT\ndeny-license GPL-3.0-only\n",
    )
    (project / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0


def test_list_shows_license_and_deprecation(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _deps(tree)
    (project / "wgt.mod").write_text("module example.com/app\nwgt 0.1\nlicense Apache-2.0\n")
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    r = wgtpm("list", "-m", "-json", "all", cwd=project)
    assert r.code == 0, r.err
    rows = {row["path"]: row for row in json.loads(r.out)}
    assert rows["example.com/app"]["license"] == "Apache-2.0"
    assert rows["github.com/acme/a"]["license"] == "MIT"
    assert rows["github.com/acme/b"]["license"] == "GPL-3.0-only"
    assert "deprecated" not in rows["github.com/acme/b"]  # only with -u, as in Go


def test_get_and_list_u_show_deprecation(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.1.0")
    _deprecate(tree, "github.com/acme/b", "v0.2.0", "use github.com/acme/b2 instead.")
    (project / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
    r = wgtpm("get", "-q", "github.com/acme/b@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert r.err == (
        "wgtpm: module github.com/acme/b is deprecated: use github.com/acme/b2 instead.\n"
        "wgtpm: added github.com/acme/b v0.1.0\n"
    )
    r = wgtpm("list", "-m", "-u", "all", cwd=project)
    assert "github.com/acme/b v0.1.0 [v0.2.0] (deprecated)" in r.out
    r = wgtpm("list", "-m", "-u", "-json", "all", cwd=project)
    row = next(x for x in json.loads(r.out) if x["path"] == "github.com/acme/b")
    assert row["deprecated"] == "use github.com/acme/b2 instead."


def _deprecate(tree: ProxyTree, path: str, version: str, text: str) -> None:
    """Publish ``path@version`` again with a wgt.mod that deprecates the module."""
    pub(
        tree,
        path,
        version,
        files={
            "wgt.mod": f"// Deprecated: {text}\nmodule {path}\nwgt 0.1\n".encode(),
            "x.bin": b"x",
        },
    )


def test_mod_edit_license_flags(wgtpm, project: Path) -> None:
    r = wgtpm(
        "mod",
        "edit",
        "-license=MIT OR Apache-2.0",
        "-denylicense=GPL-3.0-only",
        "-denylicense=NOASSERTION",
        "-dropdenylicense=NOASSERTION",
        cwd=project,
    )
    assert r.code == 0, r.err
    assert (project / "wgt.mod").read_text() == (
        'module example.com/app\nwgt 0.1\n\nlicense "MIT OR Apache-2.0"\n\n'
        "deny-license (\n\tGPL-3.0-only\n)\n"  # a block stays a block, as in go.mod
    )
    r = wgtpm("mod", "edit", "-json", cwd=project)
    doc = json.loads(r.out)
    assert doc["license"] == "MIT OR Apache-2.0" and doc["deny_license"] == ["GPL-3.0-only"]
    r = wgtpm("mod", "edit", "-denylicense=MIT OR X", cwd=project)
    assert r.code != 0
    assert r.err == (
        "wgtpm: -denylicense=MIT OR X: name one license, not an AND/OR expression; "
        "want SPDX (like MIT)\n"
    )
    r = wgtpm("mod", "edit", "-license=none", cwd=project)
    assert "license" not in (project / "wgt.mod").read_text().replace("deny-license", "")


# ---- wgtpm sbom ---------------------------------------------------------------------------


def _sbom_project(wgtpm, tree: ProxyTree, project: Path) -> None:  # type: ignore[no-untyped-def]
    pub(
        tree,
        "github.com/acme/b",
        "v0.1.0",
        extra="license GPL-3.0-only WITH Classpath-exception-2.0\n",
    )
    pub(
        tree,
        "github.com/acme/a",
        "v0.1.0",
        ["github.com/acme/b v0.1.0"],
        extra='license "(MIT OR apache-2.0) AND LicenseRef-acme"\n',
    )
    pub(tree, "github.com/acme/c", "v0.1.0", extra="license llama3\n")
    (project / "wgt.mod").write_text("module example.com/app\nwgt 0.1\nlicense Apache-2.0\n")
    r = wgtpm("get", "github.com/acme/a@v0.1.0", "github.com/acme/c@v0.1.0", cwd=project)
    assert r.code == 0, r.err


def test_sbom_cyclonedx_is_valid_and_lists_models_with_hashes_and_licenses(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    monkeypatch.setenv("WGTPROXY", tree.url)
    _sbom_project(wgtpm, tree, project)
    r = wgtpm("sbom", cwd=project)
    assert r.code == 0, r.err
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(r.out)
    assert error is None, error.data.message  # type: ignore[union-attr]
    doc = json.loads(r.out)
    assert doc["specVersion"] == "1.6"
    main = doc["metadata"]["component"]
    assert main["type"] == "machine-learning-model" and main["name"] == "example.com/app"
    assert main["licenses"] == [{"license": {"id": "Apache-2.0"}}]
    comps = {c["name"]: c for c in doc["components"]}
    assert set(comps) == {"github.com/acme/a", "github.com/acme/b", "github.com/acme/c"}
    assert all(c["type"] == "machine-learning-model" for c in comps.values())
    sums = (project / "wgt.sum").read_text().split("\n")
    for name, c in comps.items():
        props = {p["name"]: p["value"] for p in c["properties"]}
        assert f"{name} {c['version']} {props['wgtpm:h1']}" in sums
        assert f"{name} {c['version']}/wgt.mod {props['wgtpm:mod-h1']}" in sums
        files = {f["name"]: f for f in c["components"]}
        weights = files[f"{name.rsplit('/', 1)[1]}/weights.bin"]
        data = f"{name}@v0.1.0".encode() * 50
        assert weights["type"] == "file"
        assert weights["hashes"] == [
            {"alg": "SHA-256", "content": __import__("hashlib").sha256(data).hexdigest()}
        ]
    assert comps["github.com/acme/a"]["licenses"] == [
        {"expression": "(MIT OR Apache-2.0) AND LicenseRef-acme"}
    ]
    assert comps["github.com/acme/c"]["licenses"] == [{"license": {"name": "llama3"}}]
    deps = {d["ref"]: d.get("dependsOn", []) for d in doc["dependencies"]}
    assert deps["github.com/acme/a@v0.1.0"] == ["github.com/acme/b@v0.1.0"]
    assert sorted(deps["example.com/app"]) == [
        "github.com/acme/a@v0.1.0",
        "github.com/acme/c@v0.1.0",
    ]
    assert "wgtpm:signer" not in r.out  # no trust line: no signature is verified, none claimed


def test_sbom_spdx_is_structurally_valid(
    wgtpm, tree: ProxyTree, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _sbom_project(wgtpm, tree, project)
    out = project / "bom.spdx.json"
    r = wgtpm("sbom", "--format", "spdx", "-o", str(out), cwd=project)
    assert r.code == 0 and r.out == "", r.err
    doc = json.loads(out.read_text())
    _check_spdx_2_3(doc)
    pkgs = {p["name"]: p for p in doc["packages"]}
    assert pkgs["example.com/app"]["licenseDeclared"] == "Apache-2.0"
    assert pkgs["github.com/acme/a"]["licenseDeclared"] == "(MIT OR Apache-2.0) AND LicenseRef-acme"
    assert (
        pkgs["github.com/acme/b"]["licenseDeclared"] == "GPL-3.0-only WITH Classpath-exception-2.0"
    )
    assert pkgs["github.com/acme/c"]["licenseDeclared"] == "LicenseRef-llama3"
    assert [e["licenseId"] for e in doc["hasExtractedLicensingInfos"]] == [
        "LicenseRef-acme",
        "LicenseRef-llama3",
    ]
    assert "h1:" in pkgs["github.com/acme/b"]["comment"]


def _check_spdx_2_3(doc: dict) -> None:  # type: ignore[type-arg]
    """The structure SPDX 2.3 requires of a JSON document (its spec, clauses 6-11)."""
    import re

    assert doc["spdxVersion"] == "SPDX-2.3" and doc["dataLicense"] == "CC0-1.0"
    assert doc["SPDXID"] == "SPDXRef-DOCUMENT" and doc["name"]
    assert re.match(r"https?://\S+\Z", doc["documentNamespace"])
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z", doc["creationInfo"]["created"])
    assert all(
        re.match(r"(Tool|Person|Organization): ", c) for c in doc["creationInfo"]["creators"]
    )
    ids = {"SPDXRef-DOCUMENT"}
    refs = {e["licenseId"] for e in doc.get("hasExtractedLicensingInfos", [])}
    for p in doc["packages"]:
        for key in (
            "SPDXID",
            "name",
            "downloadLocation",
            "licenseConcluded",
            "licenseDeclared",
            "copyrightText",
        ):
            assert p[key], key
        assert p["filesAnalyzed"] is False  # so no packageVerificationCode is required
        for word in re.findall(r"LicenseRef-[A-Za-z0-9.\-]+", p["licenseDeclared"]):
            assert word in refs, f"{word} is used but not defined"
        ids.add(p["SPDXID"])
    for f in doc["files"]:
        assert f["fileName"].startswith("./")
        assert [c["algorithm"] for c in f["checksums"]] == ["SHA256"]
        assert re.match(r"[0-9a-f]{64}\Z", f["checksums"][0]["checksumValue"])
        ids.add(f["SPDXID"])
    assert all(re.match(r"SPDXRef-[A-Za-z0-9.\-]+\Z", i) for i in ids)
    assert len(ids) == len(doc["packages"]) + len(doc["files"]) + 1  # unique
    kinds = {"DESCRIBES", "CONTAINS", "DEPENDS_ON"}
    for rel in doc["relationships"]:
        assert rel["spdxElementId"] in ids and rel["relatedSpdxElement"] in ids
        assert rel["relationshipType"] in kinds
