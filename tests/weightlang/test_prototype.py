"""Compatibility with the WeightLang 0.1.0 prototype (``weightc``), both ways.

The golden artifacts in ``tests/testdata/weightlang/prototype/`` were written
by the prototype's own compiler (see :mod:`tests.weightlang.prototype`):
wgtpm must read, verify, run and import from them with their pins, and
building the same sources must give the same weights, byte for byte. What
wgtpm builds must pass the prototype's loader: run from ../shared/prototypes
when it is there, and always by its rules restated in :func:`_prototype_rules`.
wgtpm's own earlier format (``tests/testdata/weightlang/legacy/``) is still read.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from wgtpm._errors import UsageError
from wgtpm.weightlang import (
    Artifact,
    ArtifactError,
    LayerImportError,
    UntrainedWeightsWarning,
    WgtError,
    load_artifact,
)
from wgtpm.weightlang.build import build_wgt
from wgtpm.weightlang.ops import tensor_shapes

from . import prototype
from .conftest import write

GOLDEN = prototype.GOLDEN
LEGACY = GOLDEN.parent / "legacy"
NAMES = ("xor", "classifier", "regress", "untrained")
XOR_PIN = "d58c347ae63e2a6d0d1ff375e33ee818156178c540c80b67243f5030f4015ef8"
LEGACY_XOR_PIN = "5ade9f89993ef7370a0376f14c52cd282fbfa08123ad5f45754b7b317a003060"


def _manifest(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "manifest.json").read_text())
    return data


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(path: Path) -> Artifact:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrainedWeightsWarning)
        return load_artifact(path)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """wgtpm's builds of the goldens' own sources, laid out as the prototype built them."""
    work = tmp_path_factory.mktemp("rebuilt")
    shutil.copytree(GOLDEN / "xor", work / "xor")  # the classifier imports "../xor"
    for name in NAMES:
        src = work / "src" / f"{name}.wgt"
        src.parent.mkdir(exist_ok=True)
        shutil.copyfile(GOLDEN / name / "source.wgt", src)
        build_wgt(src, work / "out" / name)
    return work / "out"


@pytest.mark.parametrize("name", NAMES)
def test_golden_artifacts_load_verify_and_run(name: str) -> None:
    art = _load(GOLDEN / name)
    assert art.name == name
    assert art.weights_sha256 == _sha256(GOLDEN / name / "weights.safetensors")
    assert art.manifest["compiler"]["name"] == "weightc"  # reads like the prototype's dict
    out = art.predict([[0.0] * art.manifest.input.width])
    assert out.shape == (1, art.manifest.output.width)


def test_golden_xor_still_computes_xor() -> None:
    out = _load(GOLDEN / "xor").predict([[0, 0], [0, 1], [1, 0], [1, 1]])
    assert [round(float(v)) for v in out[:, 0]] == [0, 1, 1, 0]


def test_untrained_golden_warns() -> None:
    with pytest.warns(UntrainedWeightsWarning, match="h.bias, h.weight"):
        art = load_artifact(GOLDEN / "untrained")
    assert art.untrained_tensors == ["h.bias", "h.weight"]


@pytest.mark.parametrize("name", NAMES)
def test_wgtpm_builds_the_prototypes_bytes(rebuilt: Path, name: str) -> None:
    """Same source, same weights.safetensors bytes, same pin; the prototype's records agree."""
    ours, theirs = rebuilt / name, GOLDEN / name
    assert (ours / "weights.safetensors").read_bytes() == (
        theirs / "weights.safetensors"
    ).read_bytes()
    mine, golden = _manifest(ours), _manifest(theirs)
    assert mine["weights"]["sha256"] == golden["weights"]["sha256"]
    same = ("format", "format_version", "language_version", "model", "source", "interface")
    assert {k: mine[k] for k in same} == {k: golden[k] for k in same}
    assert mine["layers"] == golden["layers"]
    assert mine["init"]["seed"] == golden["init"]["seed"]
    for table in (mine["weights"]["tensors"], golden["weights"]["tensors"]):
        for entry in table.values():
            entry.pop("sha256", None)  # wgtpm's addition
    assert mine["weights"]["tensors"] == golden["weights"]["tensors"]
    if golden["training"] is None:
        assert mine["training"] is None
    else:
        assert {k: mine["training"][k] for k in golden["training"]} == golden["training"]
    assert [{k: r[k] for k in g} for r, g in zip(mine["imports"], golden["imports"])] == golden[
        "imports"
    ]


def test_import_from_a_prototype_artifact_with_its_pin(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "xor", tmp_path / "xor")
    text = (GOLDEN / "classifier" / "source.wgt").read_text()
    assert f"sha256={XOR_PIN}" in text
    build_wgt(write(tmp_path / "src", "clf.wgt", text), tmp_path / "clf")
    clf = load_artifact(tmp_path / "clf")
    assert torch.equal(clf.layer("h1")["weight"], _load(GOLDEN / "xor").layer("h1")["weight"])

    wrong = text.replace(XOR_PIN, "0" * 64)
    with pytest.raises(LayerImportError, match=f"has weights sha256={XOR_PIN}"):
        build_wgt(write(tmp_path / "src", "wrong.wgt", wrong), tmp_path / "wrong")


def test_module_import_of_a_prototype_artifact(tmp_path: Path) -> None:
    """A prototype artifact in a release (MODULE/xor), imported by module path and pinned."""
    from wgtpm.deps import MapResolver, ResolvedModule

    base = "github.com/acme/xor-base"
    shutil.copytree(GOLDEN / "xor", tmp_path / "release" / "xor")
    resolver = MapResolver({base: ResolvedModule(base, "v0.1.0", tmp_path / "release", None)})
    text = (GOLDEN / "classifier" / "source.wgt").read_text()
    text = text.replace('"../xor".h1', f"{base}/xor.h1")
    build_wgt(write(tmp_path / "src", "clf.wgt", text), tmp_path / "clf", resolver=resolver)
    record = _manifest(tmp_path / "clf")["imports"][0]
    assert record["package"] == {"module": base, "version": "v0.1.0", "commit": None}
    assert (record["source"], record["source_weights_sha256"]) == (f"{base}/xor", XOR_PIN)
    assert (tmp_path / "clf" / "weights.safetensors").read_bytes() == (
        GOLDEN / "classifier" / "weights.safetensors"
    ).read_bytes()


def test_cli_on_prototype_artifacts(wgtpm: Any) -> None:
    r = wgtpm("verify", str(GOLDEN / "xor"))
    assert r.code == 0 and XOR_PIN in r.out, r.err
    r = wgtpm("run", str(GOLDEN / "xor"), "--input", "[[0, 1], [1, 1]]")
    assert r.code == 0, r.err
    assert [round(v[0]) for v in json.loads(r.out)["y"]] == [1, 0]
    r = wgtpm("inspect", str(GOLDEN / "classifier"))
    assert r.code == 0, r.err
    assert "weightc 0.1.0" in r.out and '"../xor".h1' in r.out and "pinned" in r.out
    r = wgtpm("inspect", "--json", str(GOLDEN / "classifier"))
    assert r.out.encode() == (GOLDEN / "classifier" / "manifest.json").read_bytes()


# --- what wgtpm writes, read by the prototype's rules -----------------------------


def _prototype_rules(path: Path) -> None:
    """The checks of the prototype's ``load_artifact``, restated (not its code)."""
    m = _manifest(path)
    assert m["format"] == "weightlang.artifact" and m["format_version"] == 1
    assert _sha256(path / m["weights"]["file"]) == m["weights"]["sha256"]
    assert _sha256(path / m["source"]["file"]) == m["source"]["sha256"]
    expected: dict[str, tuple[int, ...]] = {}
    for layer in m["layers"]:
        assert layer["op"] in ("linear", "relu", "tanh", "sigmoid")
        for tensor, shape in tensor_shapes(layer["op"], layer["args"]).items():
            expected[f"{layer['name']}.{tensor}"] = shape
    raw = (path / m["weights"]["file"]).read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    header.pop("__metadata__")
    assert {k: tuple(v["shape"]) for k, v in header.items()} == expected
    assert {v["dtype"] for v in header.values()} == {"F32"}
    assert set(m["weights"]["tensors"]) == set(expected)
    origins = {"random-init", "trained", "imported", "imported+trained"}
    assert {t["origin"] for t in m["weights"]["tensors"].values()} <= origins
    # and what its inspect command reads
    assert m["compiler"]["version"] and m["language_version"] == "0.1"
    assert all("source_weights_sha256" in r and "frozen" in r for r in m["imports"])


@pytest.fixture(scope="module")
def weightc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The prototype's own package, from ../shared/prototypes."""
    if not prototype.available():
        pytest.skip(f"the prototype is not at {prototype.DIFF}")
    yield prototype.load(tmp_path_factory.mktemp("weightc"))


@pytest.mark.parametrize("name", NAMES)
def test_wgtpm_artifacts_follow_the_prototypes_rules(rebuilt: Path, name: str) -> None:
    _prototype_rules(rebuilt / name)


@pytest.mark.parametrize("name", NAMES)
def test_the_prototype_loads_what_wgtpm_builds(
    rebuilt: Path, weightc: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", weightc.UntrainedWeightsWarning)
        theirs = weightc.load_artifact(rebuilt / name)
    ours = _load(rebuilt / name)
    x = torch.tensor([[0.0] * ours.manifest.input.width, [1.0] * ours.manifest.input.width])
    assert torch.equal(theirs.predict(x), ours.predict(x))
    assert theirs.untrained_tensors == ours.untrained_tensors
    assert weightc.cli.main(["inspect", str(rebuilt / name)]) == 0
    assert weightc.cli.main(["verify", str(rebuilt / name)]) == 0
    assert "compiler" not in capsys.readouterr().err


def test_the_prototype_imports_from_what_wgtpm_builds(
    rebuilt: Path, weightc: Any, tmp_path: Path
) -> None:
    """The prototype's compiler takes a layer from a wgtpm artifact, pinned by wgtpm's hash."""
    shutil.copytree(rebuilt / "xor", tmp_path / "xor")
    pin = _manifest(rebuilt / "xor")["weights"]["sha256"]
    src = write(tmp_path / "src", "classifier.wgt", prototype.CLASSIFIER_WGT.replace("PIN", pin))
    program = prototype.programs(weightc.syntax, pin)["classifier"]
    program.path = str(src)
    weightc.syntax.PROGRAMS[str(src.resolve())] = program
    result = weightc.compiler.compile_file(src, tmp_path / "out")
    assert result.manifest["imports"][0]["source_weights_sha256"] == pin
    # and the weights are those of the golden classifier, built from the golden xor
    assert _sha256(result.path / "weights.safetensors") == _sha256(
        GOLDEN / "classifier" / "weights.safetensors"
    )


# --- NaN and legacy ---------------------------------------------------------------


def test_legacy_wgtpm_artifacts_are_still_read(wgtpm: Any, tmp_path: Path) -> None:
    art = load_artifact(LEGACY / "xor")
    assert art.manifest.legacy and art.weights_sha256 == LEGACY_XOR_PIN
    out = art.predict([[0, 1], [1, 1]])
    assert [round(float(v)) for v in out[:, 0]] == [1, 0]
    r = wgtpm("inspect", str(LEGACY / "xor"))
    assert r.code == 0 and "legacy format wgtpm.weightlang.artifact" in r.out, r.err
    # its pins stay valid for imports
    shutil.copytree(LEGACY / "xor", tmp_path / "xor")
    text = (GOLDEN / "classifier" / "source.wgt").read_text().replace(XOR_PIN, LEGACY_XOR_PIN)
    build_wgt(write(tmp_path / "src", "clf.wgt", text), tmp_path / "clf")
    assert _manifest(tmp_path / "clf")["imports"][0]["source_weights_sha256"] == LEGACY_XOR_PIN


def test_the_root_error_has_the_prototypes_name() -> None:
    assert issubclass(ArtifactError, WgtError) and issubclass(UsageError, WgtError)
    with pytest.raises(WgtError, match=r"no manifest\.json"):
        load_artifact(GOLDEN)
