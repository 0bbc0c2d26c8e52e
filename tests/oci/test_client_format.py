"""The release format: repository names, tags, and the manifest (wgtpm.oci.naming, .manifest)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wgtpm._errors import UsageError
from wgtpm.index import IndexEntry, build_index
from wgtpm.index import parse as parse_index
from wgtpm.oci import manifest as m
from wgtpm.oci.naming import (
    check_namespace,
    repository,
    repository_element,
    tag_of,
    version_of_tag,
)

COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*")
ELEMENT = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~",
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize(
    ("elem", "want"),
    [
        ("example.com", "example.com"),
        ("xor-base", "xor-base"),
        ("v2", "v2"),
        ("Acme", "x__acme"),
        ("a~b", "xa--7eb"),
        ("_x", "x--5fx"),
        ("a..b", "xa--2e--2eb"),
        ("a__b", "xa--5f--5fb"),
    ],
)
def test_repository_element(elem: str, want: str) -> None:
    assert repository_element(elem) == want
    assert COMPONENT.fullmatch(want)


@given(ELEMENT, ELEMENT)
def test_repository_elements_are_valid_and_one_to_one(a: str, b: str) -> None:
    ea, eb = repository_element(a), repository_element(b)
    assert COMPONENT.fullmatch(ea), ea
    assert (ea == eb) == (a == b)


def test_repository_and_namespace() -> None:
    assert repository("models", "example.com/Acme/xor") == "models/example.com/x__acme/xor"
    assert repository("", "example.com/xor") == "example.com/xor"
    assert check_namespace("/team/models/", "oci://h/team/models") == "team/models"
    with pytest.raises(UsageError, match="namespace 'Team' is not an OCI repository name"):
        check_namespace("Team", "oci://h/Team")
    with pytest.raises(UsageError, match="longer than the 255"):
        repository("ns", "example.com/" + "a" * 300)


def test_tags() -> None:
    assert tag_of("v1.2.3") == "v1.2.3"
    assert tag_of("v1.2.3-rc.1+meta") == "v1.2.3-rc.1_meta"
    assert version_of_tag("v1.2.3-rc.1_meta") == "v1.2.3-rc.1+meta"


def _index() -> tuple[bytes, object]:
    files = [
        IndexEntry("wgt.mod", 20, "a" * 64),
        IndexEntry("xor/weights.safetensors", 452, "b" * 64, "xor", "wgt"),
        IndexEntry("README.md", 10, "c" * 64),
        IndexEntry("config.json", 5, "d" * 64),
        IndexEntry("wgt.provenance.json", 30, "e" * 64),
    ]
    idx = build_index(
        "example.com/Acme/xor", "v1.0.0", files, time="2026-11-29T12:00:00Z", commit="f" * 40
    )
    return idx.to_json(), idx


def test_build_is_deterministic_and_parses_back() -> None:
    data, idx = _index()
    built = m.build(idx, data)  # type: ignore[arg-type]
    assert m.build(idx, data).manifest == built.manifest  # type: ignore[arg-type]
    doc = json.loads(built.manifest)
    assert doc["artifactType"] == m.ARTIFACT_TYPE
    assert doc["config"]["mediaType"] == m.CONFIG_TYPE
    assert doc["config"]["digest"] == "sha256:" + hashlib.sha256(built.config).hexdigest()
    parsed = m.parse(built.manifest)
    titles = [layer.title for layer in parsed.layers]
    assert titles == [
        "README.md",
        "config.json",
        "wgt.mod",
        "wgt.provenance.json",
        "xor/weights.safetensors",
        "wgt.index.json",
    ]
    types = {layer.title: layer.media_type for layer in parsed.layers}
    assert types["xor/weights.safetensors"] == m.WEIGHT_TYPE
    assert types["README.md"] == m.DOC_TYPE
    assert types["config.json"] == m.WEIGHT_CONFIG_TYPE
    assert types["wgt.mod"] == m.MOD_TYPE
    assert parsed.index_layer is not None
    assert parsed.index_layer.digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert parsed.layer_for("b" * 64) is not None
    assert parsed.annotations[m.CREATED] == "2026-11-29T12:00:00Z"
    cfg = json.loads(built.config)
    assert cfg["modelfs"]["diffIds"] == [layer.digest for layer in parsed.layers]
    assert cfg["descriptor"] == {
        "name": "example.com/Acme/xor",
        "version": "v1.0.0",
        "createdAt": "2026-11-29T12:00:00Z",
    }


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        (b"nope", "not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"schemaVersion":2,"manifests":[]}', "image index"),
        (b'{"schemaVersion":1,"layers":[]}', "schemaVersion is 1"),
        (
            b'{"schemaVersion":2,"config":{"mediaType":"x","digest":"sha512:ab","size":1},'
            b'"layers":[]}',
            "is not sha256:",
        ),
        (
            b'{"schemaVersion":2,"config":{"mediaType":"x","digest":"sha256:'
            + b"a" * 64
            + b'","size":-1},"layers":[]}',
            "size -1",
        ),
    ],
)
def test_parse_refuses(doc: bytes, why: str) -> None:
    with pytest.raises(m.ManifestError, match=why):
        m.parse(doc)


def _foreign(layers: list[dict[str, object]]) -> m.Manifest:
    return m.parse(
        json.dumps(
            {
                "schemaVersion": 2,
                "config": {"mediaType": "x", "digest": "sha256:" + "0" * 64, "size": 2},
                "layers": layers,
                "annotations": {m.CREATED: "2026-01-02T03:04:05Z"},
            }
        ).encode()
    )


def test_synthesised_files_from_titles_and_modelpack_paths() -> None:
    man = _foreign(
        [
            {
                "mediaType": "a",
                "digest": "sha256:" + "1" * 64,
                "size": 3,
                "annotations": {m.TITLE: "w.bin"},
            },
            {
                "mediaType": "b",
                "digest": "sha256:" + "2" * 64,
                "size": 4,
                "annotations": {m.FILEPATH: "cfg/c.json"},
            },
            {"mediaType": "c", "digest": "sha256:" + "3" * 64, "size": 5},
        ]
    )
    files = m.synthesised_files(man)
    assert [(e.path, e.size, e.sha256) for e in files] == [
        ("w.bin", 3, "1" * 64),
        ("cfg/c.json", 4, "2" * 64),
    ]


@pytest.mark.parametrize(
    ("layers", "why"),
    [
        (
            [{"mediaType": "a", "digest": "sha256:" + "1" * 64, "size": 1}],
            "no layer has a file name",
        ),
        (
            [
                {
                    "mediaType": "a",
                    "digest": "sha256:" + "1" * 64,
                    "size": 1,
                    "annotations": {m.TITLE: "../x"},
                }
            ],
            "named '../x'",
        ),
        (
            [
                {
                    "mediaType": "a",
                    "digest": "sha256:" + "1" * 64,
                    "size": 1,
                    "annotations": {m.TITLE: "x"},
                },
                {
                    "mediaType": "a",
                    "digest": "sha256:" + "2" * 64,
                    "size": 1,
                    "annotations": {m.TITLE: "x"},
                },
            ],
            "both named 'x'",
        ),
    ],
)
def test_synthesise_refuses(layers: list[dict[str, object]], why: str) -> None:
    with pytest.raises(m.ManifestError, match=why):
        m.synthesised_files(_foreign(layers))


TESTDATA = Path(__file__).parent / "testdata"


def test_manifest_golden() -> None:
    """The exact bytes of a release's manifest and config (testdata/release.*.json).

    They are what a registry stores under the version's tag: a change makes the same
    release a different manifest, which publishing then refuses as a moved tag. Change
    them only with a new format (and say so in docs/guides/oci.md)."""
    index_bytes = (TESTDATA / "release.index.json").read_bytes()
    idx = parse_index(index_bytes, "example.com/Acme/xor", "v1.0.0")
    built = m.build(idx, index_bytes)
    assert built.manifest == (TESTDATA / "release.manifest.json").read_bytes()
    assert built.config == (TESTDATA / "release.config.json").read_bytes()
    assert m.parse(built.manifest).config.digest == built.config_descriptor.digest
