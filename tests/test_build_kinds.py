"""The registry of artifact kinds: which source is which kind, and where an artifact lies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from wgtpm import modfile
from wgtpm._errors import BuildError, UsageError, VerifyError
from wgtpm.build import (
    BuildResult,
    Target,
    build_artifact,
    builder_for_kind,
    builder_for_source,
    builders,
    locate_artifact,
    module_artifact,
    release_artifacts,
)
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.index import IndexEntry, build_index
from wgtpm.kinds import KINDS, kind_of_source


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("model.wgt", "wgt"),
        ("models/xor.wgt", "wgt"),
        ("triage.pawspec", "paw"),
        ("vendor/triage.paw", "paw"),
        ("data/vocab.json", "file"),
        ("model.wgt.bak", "file"),
        ("README", "file"),
    ],
)
def test_the_source_names_the_kind_and_its_builder(source: str, kind: str) -> None:
    assert kind_of_source(source) == kind
    builder = builder_for_source(source)
    assert builder.kind == kind and builder.claims(source)
    assert [b.kind for b in builders() if b.claims(source)] == [kind]
    mf = modfile.parse(f"module a.com/m\nartifact x {source}\n".encode(), "wgt.mod")
    assert mf.artifacts[0].kind == kind


def test_one_builder_per_kind() -> None:
    assert [b.kind for b in builders()] == list(KINDS)
    assert builder_for_kind("paw").kind == "paw"
    with pytest.raises(UsageError, match="unknown artifact kind 'onnx'"):
        builder_for_kind("onnx")


def _entry(path: str, artifact: str | None = None, kind: str | None = None) -> IndexEntry:
    return IndexEntry(path, 1, hashlib.sha256(path.encode()).hexdigest(), artifact, kind)


def test_the_index_says_where_an_artifact_is(tmp_path: Path) -> None:
    idx = build_index(
        "a.com/m",
        "v0.1.0",
        [
            _entry("wgt.mod"),
            _entry("xor/manifest.json", "xor", "wgt"),
            _entry("xor/weights.safetensors", "xor", "wgt"),
            _entry("triage.paw", "triage", "paw"),
            _entry("data/vocab.json", "vocab", "file"),
        ],
        time="2026-12-01T00:00:00Z",
    )
    assert release_artifacts(idx) == {"xor": "wgt", "triage": "paw", "vocab": "file"}
    got = {n: locate_artifact(tmp_path, n, index=idx) for n in ("xor", "triage", "vocab", "nope")}
    assert {n: (a.kind, a.path, a.files) if a else None for n, a in got.items()} == {
        "xor": ("wgt", tmp_path / "xor", ("xor/manifest.json", "xor/weights.safetensors")),
        "triage": ("paw", tmp_path / "triage.paw", ("triage.paw",)),
        "vocab": ("file", tmp_path / "data/vocab.json", ("data/vocab.json",)),
        "nope": None,
    }


@pytest.mark.parametrize(
    ("layout", "name", "want"),
    [
        (["xor/manifest.json"], "xor", ("wgt", "xor")),
        (["build/xor/manifest.json"], "xor", ("wgt", "build/xor")),
        (["triage.paw"], "triage", ("paw", "triage.paw")),
        (["build/triage.paw"], "triage", ("paw", "build/triage.paw")),
        (["triage.paw"], "triage.paw", ("paw", "triage.paw")),
        (["vocab.json"], "vocab.json", ("file", "vocab.json")),
        (["xor/manifest.json", "build/xor/manifest.json"], "xor", ("wgt", "xor")),
        (["other/manifest.json"], "xor", None),
    ],
)
def test_without_an_index_the_builders_find_their_outputs(
    tmp_path: Path, layout: list[str], name: str, want: tuple[str, str] | None
) -> None:
    for p in layout:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("x")
    found = module_artifact(ResolvedModule("a.com/m", "", tmp_path), name)
    got = (found.kind, found.path.relative_to(tmp_path).as_posix()) if found else None
    assert got == want


def test_a_module_index_is_read_with_index_parse(tmp_path: Path) -> None:
    (tmp_path / "wgt.index.json").write_text('{"files": []}')
    with pytest.raises(VerifyError, match=r"bad wgt\.index\.json"):
        module_artifact(ResolvedModule("a.com/m", "v0.1.0", tmp_path), "x")


def test_a_file_artifact_is_copied_and_ships_the_copy(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "vocab.json").write_text("{}\n")
    target = Target(tmp_path, "vocab", "data/vocab.json", tmp_path / "build")
    result = build_artifact(target, MapResolver({}))
    assert result == BuildResult(
        "file",
        "copied data/vocab.json to build/data/vocab.json",
        {"data/vocab.json": tmp_path / "build" / "data" / "vocab.json"},  # the source read once
    )
    assert (tmp_path / "build" / "data" / "vocab.json").read_text() == "{}\n"
    missing = Target(tmp_path, "gone", "gone.txt", tmp_path / "build")
    assert builder_for_source("gone.txt").outputs(missing) is None
    with pytest.raises(BuildError, match=r"artifact gone: cannot read gone\.txt"):
        build_artifact(missing, MapResolver({}))
