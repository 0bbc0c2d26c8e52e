"""Building .wgt files: training, determinism, byte-stable output, failures that leave nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from wgtpm._errors import BuildError, ParseError, WgtpmError
from wgtpm.weightlang import UntrainedWeightsWarning
from wgtpm.weightlang.api import open_artifact
from wgtpm.weightlang.build import build_wgt

from .conftest import XOR, XOR_ROWS, assert_no_artifact, tree_hashes, write


def test_xor_trains_to_full_accuracy(xor_artifact: Path) -> None:
    manifest = json.loads((xor_artifact / "manifest.json").read_text())
    training = manifest["training"]
    assert training["train_accuracy"] == 1.0
    assert training["final_loss"] < training["initial_loss"] / 10
    assert (training["rows"], training["steps"], training["batch"]) == (4, 300, "full")
    assert {t["origin"] for t in manifest["weights"]["tensors"].values()} == {"trained"}
    xor = open_artifact(xor_artifact)
    out = xor.predict([x for x, _ in XOR_ROWS])
    assert out.shape == (4, 1)
    assert [round(float(v)) for v in out[:, 0]] == [y for _, y in XOR_ROWS]


def test_manifest_records_hashes_of_what_it_ships(xor_artifact: Path) -> None:
    manifest = json.loads((xor_artifact / "manifest.json").read_text())
    files = tree_hashes(xor_artifact)
    assert sorted(files) == ["manifest.json", "source.wgt", "weights.safetensors"]
    assert manifest["weights"]["sha256"] == files["weights.safetensors"]
    assert manifest["source"]["sha256"] == files["source.wgt"]
    assert (xor_artifact / "source.wgt").read_text() == XOR
    # The prototype's layout: json.dumps(indent=2) in its key order, wgtpm's extra keys last.
    raw = (xor_artifact / "manifest.json").read_bytes()
    assert raw == (json.dumps(manifest, indent=2) + "\n").encode()
    assert list(manifest) == [
        *("format", "format_version", "language_version", "model", "compiler"),
        *("source", "interface", "layers", "init", "imports", "training", "weights", "data"),
    ]


def test_rebuild_is_byte_identical(tmp_path: Path, xor_artifact: Path) -> None:
    src = write(tmp_path / "elsewhere", "xor.wgt", XOR)
    build_wgt(src, tmp_path / "a" / "xor")
    first = tree_hashes(tmp_path / "a" / "xor")
    build_wgt(src, tmp_path / "a" / "xor")  # over the old build, in place
    build_wgt(src, tmp_path / "b" / "xor")
    assert tree_hashes(tmp_path / "a" / "xor") == first
    assert tree_hashes(tmp_path / "b" / "xor") == first
    assert tree_hashes(xor_artifact) == first  # the session build, from another directory
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["xor"]


def test_seed_decides_the_weights(tmp_path: Path, xor_artifact: Path) -> None:
    src = write(tmp_path, "xor.wgt", XOR.replace("seed 0", "seed 1"))
    build_wgt(src, tmp_path / "xor")
    before = (xor_artifact / "weights.safetensors").read_bytes()
    assert (tmp_path / "xor" / "weights.safetensors").read_bytes() != before


MINIBATCH = """\
wgt 0.1
model blobs
seed 3
input x: f32[2]
output logits: f32[3]
layer h = linear(2, 16)
layer n = layernorm(16)
layer a = gelu
layer d = dropout(p=0.1)
layer out = linear(16, 3)
data d {
  [0, 0] -> [0]
  [0.1, 0.2] -> [0]
  [1, 1] -> [1]
  [0.9, 1.1] -> [1]
  [-1, 1] -> [2]
  [-1.1, 0.8] -> [2]
}
train data=d loss=ce optimizer=adam lr=0.05 epochs=60 batch=4
"""


def test_minibatches_and_dropout_are_deterministic(tmp_path: Path) -> None:
    src = write(tmp_path, "blobs.wgt", MINIBATCH)
    torch.manual_seed(1234)
    global_state = torch.get_rng_state()
    build_wgt(src, tmp_path / "one")
    assert torch.equal(torch.get_rng_state(), global_state)  # the build used its own generator
    build_wgt(src, tmp_path / "two")
    assert tree_hashes(tmp_path / "one") == tree_hashes(tmp_path / "two")
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["training"]["steps"] == 120  # 60 epochs of ceil(6 / 4) batches
    assert manifest["training"]["train_accuracy"] == 1.0
    model = open_artifact(tmp_path / "one")
    assert int(model.predict([-1.0, 1.0]).argmax()) == 2


def test_mse_and_sgd_and_csv_data(tmp_path: Path) -> None:
    rows = "".join(f"{x},{2 * x + 1}\n" for x in (-1.0, -0.5, 0.0, 0.5, 1.0))
    write(tmp_path, "line.csv", "x,y\n" + rows)
    text = (
        "wgt 0.1\nmodel line\ninput x: f32[1]\noutput y: f32[1]\nlayer l = linear(1, 1)\n"
        'data pts from "line.csv" targets=1\n'
        "train data=pts loss=mse optimizer=sgd lr=0.3 epochs=200\n"
    )
    build_wgt(write(tmp_path, "line.wgt", text), tmp_path / "line")
    manifest = json.loads((tmp_path / "line" / "manifest.json").read_text())
    assert manifest["training"]["final_loss"] < 1e-6
    assert "train_accuracy" not in manifest["training"]
    csv_sha = hashlib.sha256((tmp_path / "line.csv").read_bytes()).hexdigest()
    assert manifest["data"]["pts"] == {
        "kind": "csv",
        "file": "line.csv",
        "rows": 5,
        "sha256": csv_sha,
        "targets": 1,
    }
    assert float(open_artifact(tmp_path / "line").predict([2.0])[0]) == pytest.approx(5.0, abs=1e-3)


def test_untrained_model_is_marked_and_warns(tmp_path: Path) -> None:
    text = XOR.replace("train data=xor loss=bce optimizer=adam lr=0.05 epochs=300\n", "")
    build_wgt(write(tmp_path, "xor.wgt", text), tmp_path / "xor")
    manifest = json.loads((tmp_path / "xor" / "manifest.json").read_text())
    assert manifest["training"] is None
    assert {t["origin"] for t in manifest["weights"]["tensors"].values()} == {"random-init"}
    with pytest.warns(UntrainedWeightsWarning, match="h1.bias, h1.weight, out.bias, out.weight"):
        open_artifact(tmp_path / "xor")


DIVERGES = XOR.replace("loss=bce optimizer=adam lr=0.05", "loss=mse optimizer=sgd lr=1e12").replace(
    "layer p = sigmoid\n", ""
)


@pytest.mark.parametrize(
    ("text", "files", "error", "message"),
    [
        (XOR.replace("seed 0", "seed 0 0"), {}, ParseError, "xor.wgt:4:8: unexpected '0'"),
        (XOR.replace("tanh", "swish"), {}, ParseError, "xor.wgt:10:12: unknown layer kind 'swish'"),
        (XOR.replace("in=8", "in=4"), {}, ParseError, "xor.wgt:11:23: in=4 does not fit"),
        (DIVERGES, {}, BuildError, "xor.wgt:20:1: training diverged: the loss became"),
        (
            XOR.replace("train data=xor", 'data more from "more.csv" targets=1\ntrain data=more'),
            {},
            ParseError,
            'data more: cannot read "more.csv"',
        ),
        (
            XOR.replace("train data=xor", 'data more from "more.csv" targets=1\ntrain data=more'),
            {"more.csv": "0,1,1\n1,1,yes\n"},
            ParseError,
            "more.csv:2:5: 'yes' is not a number",
        ),
    ],
)
def test_bad_input_leaves_no_artifact(
    tmp_path: Path, text: str, files: dict[str, str], error: type[WgtpmError], message: str
) -> None:
    for name, content in files.items():
        write(tmp_path, name, content)
    src = write(tmp_path, "xor.wgt", text)
    dest = tmp_path / "build" / "xor"
    with pytest.raises(error) as info:
        build_wgt(src, dest, name="xor.wgt")
    assert message in str(info.value).replace(str(tmp_path) + "/", "")
    assert_no_artifact(dest)


def test_failed_rebuild_keeps_the_previous_artifact(tmp_path: Path) -> None:
    dest = tmp_path / "build" / "xor"
    build_wgt(write(tmp_path, "xor.wgt", XOR), dest)
    before = tree_hashes(dest)
    with pytest.raises(BuildError, match="training diverged"):
        build_wgt(write(tmp_path, "xor.wgt", DIVERGES), dest)
    assert tree_hashes(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["xor"]


def test_refuses_to_replace_a_directory_that_is_not_an_artifact(tmp_path: Path) -> None:
    dest = tmp_path / "build" / "xor"
    write(dest, "notes.txt", "mine")
    with pytest.raises(WgtpmError, match="not an artifact directory"):
        build_wgt(write(tmp_path, "xor.wgt", XOR), dest)
    assert (dest / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["xor"]
