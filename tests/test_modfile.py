"""wgt.mod: golden files for formatting and for errors, round-trips, and edits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wgtpm import modfile
from wgtpm._errors import ParseError

DATA = Path(__file__).parent / "testdata" / "modfile"
UPDATE = os.environ.get("WGTPM_UPDATE_GOLDEN") == "1"
INPUTS = sorted(DATA.glob("*.in"))


def golden(name: Path, got: str) -> None:
    if UPDATE:
        name.write_text(got)
    assert got == name.read_text(), f"{name.name} differs (WGTPM_UPDATE_GOLDEN=1 rewrites it)"


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_golden(path: Path) -> None:
    """Each X.in formats to X.golden, or fails with the errors in X.errors."""
    data = path.read_bytes()
    try:
        mf = modfile.parse(data, path.name)
    except ParseError as exc:
        golden(path.with_suffix(".errors"), str(exc) + "\n")
        return
    assert not path.with_suffix(".errors").exists()
    out = mf.format()
    golden(path.with_suffix(".golden"), out.decode())
    again = modfile.parse(out, path.name)
    assert again.syntax == mf.syntax, "parse(format(x)) == x"
    assert again.format() == out


def test_all_errors_reported_with_positions() -> None:
    with pytest.raises(ParseError) as ei:
        modfile.parse((DATA / "errors.in").read_bytes(), "wgt.mod")
    errs = ei.value.errors
    assert len(errs) >= 12
    assert all(e.pos.file == "wgt.mod" and e.pos.line > 0 for e in errs)
    assert [e.pos.line for e in errs] == sorted(e.pos.line for e in errs)


EDITS = [
    (
        "add to empty",
        b"module example.com/app\nwgt 0.1\n",
        lambda m: m.add_require("github.com/x/y", "v1.0.0"),
        "module example.com/app\nwgt 0.1\n\nrequire github.com/x/y v1.0.0\n",
    ),
    (
        "second require makes a block",
        b"module example.com/app\n\nrequire github.com/x/a v1.0.0 // keep me\n",
        lambda m: m.add_require("github.com/x/b", "v1.0.0", True),
        "module example.com/app\n\nrequire (\n\tgithub.com/x/a v1.0.0 // keep me\n\tgithub.com/x/b v1.0.0 // indirect\n)\n",
    ),
    (
        "update keeps comments",
        b"module example.com/app\n\n// why we need a\nrequire github.com/x/a v1.0.0 // indirect; pinned\n",
        lambda m: m.add_require("github.com/x/a", "v1.1.0", False),
        "module example.com/app\n\n// why we need a\nrequire github.com/x/a v1.1.0 // pinned\n",
    ),
    (
        "drop last line drops block",
        b"module example.com/app\n\nrequire (\n\tgithub.com/x/a v1.0.0\n)\nartifact m m.wgt\n",
        lambda m: m.drop_require("github.com/x/a"),
        "module example.com/app\n\nartifact m m.wgt\n",
    ),
    (
        "replace and retract",
        b"module example.com/app\n",
        lambda m: (
            m.add_replace("github.com/x/a", None, "../a", None),
            m.add_retract("v0.1.0", "v0.1.5", "bad data"),
        ),
        "module example.com/app\n\nreplace github.com/x/a => ../a\n\nretract [v0.1.0, v0.1.5] // bad data\n",
    ),
    (
        "module line inserted first",
        b"require github.com/x/a v1.0.0\n",
        lambda m: m.set_module("example.com/app"),
        "module example.com/app\n\nrequire github.com/x/a v1.0.0\n",
    ),
]


@pytest.mark.parametrize("name,src,edit,want", EDITS, ids=[e[0] for e in EDITS])
def test_edits(name: str, src: bytes, edit, want: str) -> None:  # type: ignore[no-untyped-def]
    mf = modfile.parse(src, "wgt.mod")
    edit(mf)
    assert mf.format().decode() == want
    assert modfile.parse(mf.format()).format() == mf.format()


def test_semantics() -> None:
    mf = modfile.parse((DATA / "blocks.in").read_bytes(), "wgt.mod")
    assert mf.replacement("github.com/acme/a", "v9.9.9").is_local  # type: ignore[union-attr]
    assert mf.replacement("github.com/acme/b", "v1.0.0").new_version == "v1.0.1"  # type: ignore[union-attr]
    assert mf.replacement("github.com/acme/b", "v1.0.1") is None
    assert mf.is_retracted("v0.2.5") and not mf.is_retracted("v0.3.0")
    assert mf.is_retracted("v0.1.0").rationale == "oops"  # type: ignore[union-attr]
    assert mf.select_patterns("hf.co/Qwen/Qwen3-0.6B") == ["*.json", "*.safetensors"]
    assert [(a.name, a.kind) for a in mf.artifacts] == [
        ("classifier", "wgt"),
        ("triage", "paw"),
        ("vocab", "file"),
    ]
    assert mf.is_excluded("github.com/acme/c", "v0.3.0")


def test_huggingface_co_is_normalised() -> None:
    mf = modfile.parse(b"module example.com/a\nrequire huggingface.co/Qwen/Qwen3-0.6B v1.0.0\n")
    assert mf.requires[0].path == "hf.co/Qwen/Qwen3-0.6B"


def test_a_file_that_is_not_a_modfile_is_not_echoed(tmp_path: Path, wgtpm) -> None:  # type: ignore[no-untyped-def]
    """A wgt.mod symlinked to a key file: errors neither print its lines nor all of them."""
    secret = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    key = tmp_path / "id_rsa"
    key.write_text(
        "-----BEGIN PRIVATE KEY-----\n" + f"{secret}\n" * 5000 + "-----END PRIVATE KEY-----\n"
    )
    app = tmp_path / "app"
    app.mkdir()
    (app / "wgt.mod").symlink_to(key)
    r = wgtpm("list", "-m", cwd=app)
    assert r.code != 0
    assert secret not in r.err + r.out
    assert "PRIVATE" not in r.err + r.out
    assert len(r.err.splitlines()) <= 23
    assert "more errors" in r.err
